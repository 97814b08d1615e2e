# Runs a command that must fail for a stated reason.
#
#   cmake -DCMD=<program;arg;arg...> -DREGEX=<regex> [-DEXPECT_RC=<code>] -P expect_failure.cmake
#
# Passes only when the command exits with a non-zero code (EXPECT_RC exactly,
# when given; a crash or a signal never passes) AND its stdout+stderr matches
# REGEX. Otherwise prints what it got and fails.

cmake_minimum_required(VERSION 3.16)

if(NOT DEFINED CMD OR "${CMD}" STREQUAL "")
  message(FATAL_ERROR "expect_failure.cmake: -DCMD=<program;args...> is required")
endif()
if(NOT DEFINED REGEX OR "${REGEX}" STREQUAL "")
  message(FATAL_ERROR "expect_failure.cmake: -DREGEX=<regex> is required")
endif()

execute_process(
  COMMAND ${CMD}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
set(all "${err}${out}")

string(REPLACE ";" " " shown "${CMD}")
set(report "command: ${shown}\nexit: ${rc}\nexpected: non-zero exit")
if(DEFINED EXPECT_RC AND NOT "${EXPECT_RC}" STREQUAL "")
  string(APPEND report " ${EXPECT_RC}")
endif()
string(APPEND report " and output matching: ${REGEX}\n--- stderr ---\n${err}\n--- stdout ---\n${out}")

if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the command did not exit normally (crash, signal or not runnable)\n${report}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the command succeeded but should have failed\n${report}")
endif()
if(DEFINED EXPECT_RC AND NOT "${EXPECT_RC}" STREQUAL "" AND NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "the command failed with the wrong exit code\n${report}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "the command failed, but not with the expected message\n${report}")
endif()
message(STATUS "failed as expected (exit ${rc}): ${all}")
