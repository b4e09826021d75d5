# pyop_query_python(EXE PREFIX)
#
# Runs the Python executable EXE (isolated mode, so the caller's PYTHON*
# environment cannot change the answer) and sets in the caller's scope:
#   ${PREFIX}_EXECUTABLE   EXE as given
#   ${PREFIX}_VERSION      "3.11"
#   ${PREFIX}_VERSION_HEX  sys.hexversion, e.g. "0x30b02f0"
#   ${PREFIX}_ABI_FLAGS    sys.abiflags ("", "t", "d", "td")
#   ${PREFIX}_TAG          python tag + ABI flags: "cp311", "cp313t", "cp311d"
#   ${PREFIX}_MACHINE      platform.machine(), else the last part of
#                          sysconfig.get_platform(): "x86_64"
#   ${PREFIX}_ARTIFACT     "${TAG}-${MACHINE}", the artifact directory name
#   ${PREFIX}_INCLUDE_DIR  the directories holding Python.h and pyconfig.h
#                          (a list: include and platinclude, deduplicated)
#   ${PREFIX}_LIBPYTHON    absolute path of the shared libpython (INSTSONAME
#                          looked up in LIBDIR/MULTIARCH, LIBDIR, LIBPL); empty
#                          when the build has none (static-only Python)
#   ${PREFIX}_HOME         sys.base_prefix (where its standard library lives)
# Fails the configure step with a readable message when EXE does not run or
# its headers (python3-dev) are missing.
function(pyop_query_python EXE PREFIX)
  set(_script [=[
import os, platform, sys, sysconfig
cv = sysconfig.get_config_var
v = sys.version_info
flags = getattr(sys, "abiflags", "") or ""
machine = platform.machine() or sysconfig.get_platform().rsplit("-", 1)[-1]
paths = sysconfig.get_paths()
inc = [paths.get("include") or "", paths.get("platinclude") or ""]
lib = ""
soname = cv("INSTSONAME") or ""
if cv("Py_ENABLE_SHARED") and soname and ".so" in soname:
    libdir = cv("LIBDIR") or ""
    for d in (os.path.join(libdir, cv("MULTIARCH") or ""), libdir, cv("LIBPL") or ""):
        p = os.path.join(d, soname)
        if d and os.path.isfile(p):
            lib = os.path.abspath(p)
            break
print("VERSION=%d.%d" % (v[0], v[1]))
print("VERSION_HEX=0x%x" % sys.hexversion)
print("ABI_FLAGS=" + flags)
print("TAG=cp%d%d%s" % (v[0], v[1], flags))
print("MACHINE=" + machine)
print("INCLUDE=" + ";".join(dict.fromkeys(i for i in inc if i)))
print("LIBPYTHON=" + lib)
print("HOME=" + sys.base_prefix)
]=])
  execute_process(
    COMMAND "${EXE}" -I -c "${_script}"
    OUTPUT_VARIABLE _out
    ERROR_VARIABLE _err
    RESULT_VARIABLE _rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pyop: cannot query Python '${EXE}' (exit ${_rc}): ${_err}")
  endif()
  string(REPLACE "\n" ";" _lines "${_out}")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^([A-Z_]+)=(.*)$")
      set(_q_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  # "INCLUDE=a;b" was split into separate list items above; rebuild it.
  string(REGEX MATCH "INCLUDE=([^\n]*)" _m "${_out}")
  set(_q_INCLUDE "${CMAKE_MATCH_1}")
  foreach(_k VERSION VERSION_HEX TAG MACHINE)
    if("${_q_${_k}}" STREQUAL "")
      message(FATAL_ERROR "pyop: Python '${EXE}' did not report ${_k}:\n${_out}\n${_err}")
    endif()
  endforeach()
  set(_found_header FALSE)
  foreach(_d IN LISTS _q_INCLUDE)
    if(EXISTS "${_d}/Python.h")
      set(_found_header TRUE)
    endif()
  endforeach()
  if(NOT _found_header)
    message(FATAL_ERROR "pyop: no Python.h for '${EXE}' in '${_q_INCLUDE}' "
                        "(install the development headers, e.g. python3-dev)")
  endif()
  set(${PREFIX}_EXECUTABLE "${EXE}" PARENT_SCOPE)
  set(${PREFIX}_VERSION "${_q_VERSION}" PARENT_SCOPE)
  set(${PREFIX}_VERSION_HEX "${_q_VERSION_HEX}" PARENT_SCOPE)
  set(${PREFIX}_ABI_FLAGS "${_q_ABI_FLAGS}" PARENT_SCOPE)
  set(${PREFIX}_TAG "${_q_TAG}" PARENT_SCOPE)
  set(${PREFIX}_MACHINE "${_q_MACHINE}" PARENT_SCOPE)
  set(${PREFIX}_ARTIFACT "${_q_TAG}-${_q_MACHINE}" PARENT_SCOPE)
  set(${PREFIX}_INCLUDE_DIR "${_q_INCLUDE}" PARENT_SCOPE)
  set(${PREFIX}_LIBPYTHON "${_q_LIBPYTHON}" PARENT_SCOPE)
  set(${PREFIX}_HOME "${_q_HOME}" PARENT_SCOPE)
endfunction()
