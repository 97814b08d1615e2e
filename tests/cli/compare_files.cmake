# Runs two commands and compares the files they write, byte for byte.
#
#   cmake -DCMD_A=<program;args...> -DFILE_A=<path>
#         -DCMD_B=<program;args...> -DFILE_B=<path> -P compare_files.cmake
#
# FILE_A and FILE_B are removed first (a stale file never passes); each
# command must exit 0 and write its file; then `cmake -E compare_files`
# must find them identical. On a difference, the first differing line is
# printed. CMD_A/CMD_B may be omitted to compare existing files.

cmake_minimum_required(VERSION 3.16)

foreach(v FILE_A FILE_B)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "compare_files.cmake: -D${v}=<path> is required")
  endif()
endforeach()

foreach(side A B)
  if(DEFINED CMD_${side} AND NOT "${CMD_${side}}" STREQUAL "")
    file(REMOVE "${FILE_${side}}")
    execute_process(
      COMMAND ${CMD_${side}}
      RESULT_VARIABLE rc
      OUTPUT_VARIABLE out
      ERROR_VARIABLE err)
    string(REPLACE ";" " " shown "${CMD_${side}}")
    if(NOT rc STREQUAL "0")
      message(FATAL_ERROR "command ${side} failed (exit ${rc}): ${shown}\n--- stderr ---\n${err}\n--- stdout ---\n${out}")
    endif()
  endif()
  if(NOT EXISTS "${FILE_${side}}")
    message(FATAL_ERROR "file ${side} was not written: ${FILE_${side}}")
  endif()
  file(SIZE "${FILE_${side}}" size)
  if(size EQUAL 0)
    message(FATAL_ERROR "file ${side} is empty: ${FILE_${side}}")
  endif()
endforeach()

execute_process(
  COMMAND "${CMAKE_COMMAND}" -E compare_files "${FILE_A}" "${FILE_B}"
  RESULT_VARIABLE same)
if(NOT same STREQUAL "0")
  file(STRINGS "${FILE_A}" lines_a)
  file(STRINGS "${FILE_B}" lines_b)
  list(LENGTH lines_a na)
  list(LENGTH lines_b nb)
  set(where "the files differ (${na} vs ${nb} lines; line endings or a missing last line?)")
  set(i 0)
  foreach(la IN LISTS lines_a)
    if(i GREATER_EQUAL nb)
      break()
    endif()
    list(GET lines_b ${i} lb)
    if(NOT la STREQUAL lb)
      math(EXPR lineno "${i} + 1")
      set(where "first difference at line ${lineno}:\n  A: ${la}\n  B: ${lb}")
      break()
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
  message(FATAL_ERROR "${FILE_A} and ${FILE_B} differ; ${where}")
endif()
file(STRINGS "${FILE_A}" lines_a)
list(LENGTH lines_a na)
message(STATUS "identical (${na} lines): ${FILE_A} ${FILE_B}")
