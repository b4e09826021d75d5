# cmake -DNM=nm -DDIR=<fake bridge dir> -DNAMES=a,b,c -P check_exports.cmake
# Fails unless every <DIR>/<name>/libpyop_bridge.so defines exactly one
# dynamic symbol, pyop_bridge_entry (NO_ENTRY: none at all; DATA_ENTRY's is a
# data object).
string(REPLACE "," ";" names "${NAMES}")
set(bad "")
foreach(name IN LISTS names)
  set(lib "${DIR}/${name}/libpyop_bridge.so")
  execute_process(COMMAND ${NM} -D --defined-only "${lib}"
    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(APPEND bad "${lib}: nm failed\n")
    continue()
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  set(syms "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^.* " "" sym "${line}")
    # AddressSanitizer's ODR indicator of an exported global (DATA_ENTRY's
    # data object) is the sanitizer's, not an export of the bridge.
    if(sym MATCHES "^__odr_asan")
      continue()
    endif()
    list(APPEND syms ${sym})
  endforeach()
  if(name STREQUAL "NO_ENTRY")
    set(want "")
  else()
    set(want "pyop_bridge_entry")
  endif()
  if(NOT "${syms}" STREQUAL "${want}")
    string(APPEND bad "${lib}: exports [${syms}], expected [${want}]\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "fake bridges export more than their entry:\n${bad}")
endif()
list(LENGTH names n)
message(STATUS "${n} fake bridges export only pyop_bridge_entry")
