# Runs the same simulation twice and requires byte-identical stdout (docs/design.md
# §1: the core and the simulator are deterministic).
#
#   cmake -DCMD="bin|arg1|arg2" -DOUT=dir -P same_output_twice.cmake
string(REPLACE "|" ";" cmd "${CMD}")
file(MAKE_DIRECTORY "${OUT}")
foreach(run 1 2)
  execute_process(COMMAND ${cmd}
    RESULT_VARIABLE code OUTPUT_FILE "${OUT}/run${run}.jsonl" ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "run ${run} exited ${code}:\n${err}")
  endif()
endforeach()
file(SIZE "${OUT}/run1.jsonl" size)
if(size EQUAL 0)
  message(FATAL_ERROR "no output")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}/run1.jsonl" "${OUT}/run2.jsonl"
  RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "the two runs differ: ${OUT}/run1.jsonl ${OUT}/run2.jsonl")
endif()
