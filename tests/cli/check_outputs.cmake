# Runs a tiny simulation and checks the files it writes.
#
#   cmake -DCMD=<program;args...> -DOUT=<out dir the command writes> -P check_outputs.cmake
#
# metrics.csv: the exact header line, then at least one data row per round;
# summary.json: valid JSON with a numeric final_error_mean for every algorithm.

cmake_minimum_required(VERSION 3.19)  # string(JSON)

foreach(v CMD OUT)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_outputs.cmake: -D${v}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE ";" " " shown "${CMD}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "the run failed (exit ${rc}): ${shown}\n--- stderr ---\n${err}\n--- stdout ---\n${out}")
endif()

# metrics.csv
set(csv "${OUT}/metrics.csv")
if(NOT EXISTS "${csv}")
  message(FATAL_ERROR "no ${csv}")
endif()
file(READ "${csv}" text)
set(header "algorithm,run,round,error,agents,bits_up,bits_down")
string(FIND "${text}" "\n" eol)
if(eol LESS 0)
  message(FATAL_ERROR "${csv} has no complete line:\n${text}")
endif()
string(SUBSTRING "${text}" 0 ${eol} first)
if(NOT first STREQUAL header)
  message(FATAL_ERROR "${csv}: header is\n  '${first}'\nexpected\n  '${header}'")
endif()
# A data row: name,run,round,error,agents,bits_up,bits_down
if(NOT text MATCHES "\n[a-z-]+,0,1,[-+0-9.eE]+,[0-9]+,[0-9]+,[0-9]+\n")
  message(FATAL_ERROR "${csv}: no well-formed data row for run 0, round 1:\n${text}")
endif()

# summary.json
set(json "${OUT}/summary.json")
if(NOT EXISTS "${json}")
  message(FATAL_ERROR "no ${json}")
endif()
file(READ "${json}" summary)
string(FIND "${summary}" "\"final_error_mean\"" at)
if(at LESS 0)
  message(FATAL_ERROR "${json} has no final_error_mean:\n${summary}")
endif()
string(JSON algs ERROR_VARIABLE jerr GET "${summary}" algorithms)
if(jerr)
  message(FATAL_ERROR "${json}: no 'algorithms' object (${jerr}):\n${summary}")
endif()
string(JSON n LENGTH "${summary}" algorithms)
if(n EQUAL 0)
  message(FATAL_ERROR "${json}: 'algorithms' is empty")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name MEMBER "${summary}" algorithms ${i})
  string(JSON v ERROR_VARIABLE jerr GET "${summary}" algorithms ${name} final_error_mean)
  string(JSON t ERROR_VARIABLE jerr2 TYPE "${summary}" algorithms ${name} final_error_mean)
  if(jerr OR jerr2 OR NOT t STREQUAL "NUMBER")
    message(FATAL_ERROR "${json}: algorithms.${name}.final_error_mean is not a number (${jerr}${jerr2} ${t})")
  endif()
  message(STATUS "${name}: final_error_mean = ${v}")
endforeach()
