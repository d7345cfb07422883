# tests/unit/run_cli_case.cmake: runs the gapwatch binary once and checks what a user would see.
#
#   cmake -DGAPWATCH=<binary> -DARGS=<arg;arg...> -DEXPECT_EXIT=<code>
#         [-DSTDOUT_MATCHES=<regex;...>] [-DSTDOUT_NOT_MATCHES=<regex;...>]
#         [-DSTDERR_MATCHES=<regex;...>] [-DSTDERR_LINES=<n>] [-DJSON_LINES=ON]
#         -P run_cli_case.cmake
#
# Every regex in a list must match (or, for *_NOT_MATCHES, must not). STDERR_LINES checks the
# number of lines on stderr (the "one line per error" promise). JSON_LINES checks that every
# stdout line is a JSON object with a "type".

execute_process(
  COMMAND ${GAPWATCH} ${ARGS}
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE stdout
  ERROR_VARIABLE stderr)

set(failures "")
if(NOT exit_code STREQUAL EXPECT_EXIT)
  string(APPEND failures "exit code ${exit_code}, expected ${EXPECT_EXIT}\n")
endif()
foreach(regex IN LISTS STDOUT_MATCHES)
  if(NOT stdout MATCHES "${regex}")
    string(APPEND failures "stdout does not match: ${regex}\n")
  endif()
endforeach()
foreach(regex IN LISTS STDOUT_NOT_MATCHES)
  if(stdout MATCHES "${regex}")
    string(APPEND failures "stdout matches what it must not: ${regex}\n")
  endif()
endforeach()
foreach(regex IN LISTS STDERR_MATCHES)
  if(NOT stderr MATCHES "${regex}")
    string(APPEND failures "stderr does not match: ${regex}\n")
  endif()
endforeach()
if(DEFINED STDERR_LINES)
  string(REGEX MATCHALL "\n" newlines "${stderr}")
  list(LENGTH newlines line_count)
  if(NOT line_count EQUAL STDERR_LINES)
    string(APPEND failures "stderr has ${line_count} lines, expected ${STDERR_LINES}\n")
  endif()
endif()
if(JSON_LINES)
  # Lines of stdout; brackets and semicolons in JSON would upset a CMake list, so split by hand.
  set(rest "${stdout}")
  set(line_number 0)
  while(NOT rest STREQUAL "")
    string(FIND "${rest}" "\n" newline)
    if(newline EQUAL -1)
      string(APPEND failures "stdout does not end with a newline\n")
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${newline} line)
    math(EXPR after "${newline} + 1")
    string(SUBSTRING "${rest}" ${after} -1 rest)
    math(EXPR line_number "${line_number} + 1")
    string(JSON type ERROR_VARIABLE json_error GET "${line}" type)
    if(json_error)
      string(APPEND failures "stdout line ${line_number} is not a JSON object with a type: ${json_error}\n")
    endif()
  endwhile()
  if(line_number EQUAL 0)
    string(APPEND failures "no JSON lines on stdout\n")
  endif()
endif()

if(failures)
  message(FATAL_ERROR "gapwatch ${ARGS}\n${failures}--- stdout ---\n${stdout}--- stderr ---\n${stderr}")
endif()
