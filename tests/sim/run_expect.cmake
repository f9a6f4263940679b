# Runs a command and checks its exit code and, optionally, a regex on its
# stdout or stderr. CTest's own checks cannot require an exact non-zero code.
#
#   cmake -DCMD="bin|arg1|arg2" -DCODE=2 [-DSTDERR=regex] [-DSTDOUT=regex]
#         -P run_expect.cmake
# Arguments are separated by '|' (a ';' would split them on the way in).
string(REPLACE "|" ";" cmd "${CMD}")
execute_process(COMMAND ${cmd}
  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT "${code}" STREQUAL "${CODE}")
  message(FATAL_ERROR "exit code ${code}, expected ${CODE}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED STDERR AND NOT err MATCHES "${STDERR}")
  message(FATAL_ERROR "stderr does not match '${STDERR}':\n${err}")
endif()
if(DEFINED STDOUT AND NOT out MATCHES "${STDOUT}")
  message(FATAL_ERROR "stdout does not match '${STDOUT}':\n${out}")
endif()
