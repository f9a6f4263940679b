# Runs `tidegate forecast ... --plot OUT` and checks that OUT is an SVG
# document with the history, the band and the P50 line.
#   cmake -DCMD="bin|arg|..." -DOUT=file.svg -P plot_check.cmake
string(REPLACE "|" ";" cmd "${CMD}")
file(REMOVE "${OUT}")
execute_process(COMMAND ${cmd} --plot ${OUT} RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "exit code ${code}\n${err}")
endif()
file(READ "${OUT}" svg)
foreach(part "<svg xmlns=\"http://www.w3.org/2000/svg\"" "<polygon" "<polyline" "P10–P90" "</svg>")
  string(FIND "${svg}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${OUT} has no ${part}")
  endif()
endforeach()
