# cmake -DLIB=<bridge.so> -DNM=<nm> -P check_exports.cmake
# Fails unless the bridge exports exactly one symbol: pyop_bridge_entry.
if(NOT NM)
  set(NM nm)
endif()
execute_process(COMMAND ${NM} -D --defined-only ${LIB}
  OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "check_exports: ${NM} failed on ${LIB}: ${_err}")
endif()
string(REPLACE "\n" ";" _lines "${_out}")
set(_exports "")
foreach(_l IN LISTS _lines)
  # "<addr> <type> <name>"; only code and data symbols count.
  if(_l MATCHES "^[0-9a-fA-F]+ [TtDdBbRrVWu] ([^ ]+)$")
    list(APPEND _exports ${CMAKE_MATCH_1})
  endif()
endforeach()
if(NOT _exports STREQUAL "pyop_bridge_entry")
  message(FATAL_ERROR "check_exports: ${LIB} must export only pyop_bridge_entry, exports: ${_exports}")
endif()
