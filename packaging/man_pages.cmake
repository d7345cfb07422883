# packaging/man_pages.cmake: writes the man pages gapwatch(1), gapwatchd(1) and gapwatch-<command>(1)
# for every command `gapwatch --help` lists, with help2man, from the same --help text the program
# prints: a page cannot say other than the program, and a new command gets its page unasked.
#
#   cmake -DGAPWATCH=<build>/bin/gapwatch -DHELP2MAN=<help2man> -DVERSION=<x.y.z> -DOUT_DIR=<dir>
#         -P man_pages.cmake
#
# help2man runs a program with --help: each command gets a two-line wrapper (OUT_DIR/wrappers),
# whose name becomes the page's. --version-string: a command has no --version of its own.

foreach(required IN ITEMS GAPWATCH HELP2MAN VERSION OUT_DIR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "man_pages.cmake: -D${required}=... is missing")
  endif()
endforeach()

execute_process(COMMAND ${GAPWATCH} --help OUTPUT_VARIABLE help RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "man_pages.cmake: ${GAPWATCH} --help exited ${status}")
endif()
# The commands and their one-line descriptions: the lines after "Subcommands:".
string(FIND "${help}" "\nSubcommands:\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "man_pages.cmake: ${GAPWATCH} --help lists no Subcommands:")
endif()
string(SUBSTRING "${help}" ${start} -1 listing)
string(REGEX MATCHALL "\n  [a-z][a-z-]* +[^\n]+" command_lines "${listing}")

file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR}/wrappers)

# help2man <program> <page> <what it is, for NAME> [more help2man options]
function(write_page program page description)
  execute_process(
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1 --version-string=${VERSION}
            --name=${description} --output=${OUT_DIR}/${page} ${ARGN} ${program}
    RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 0 OR NOT EXISTS ${OUT_DIR}/${page})
    message(FATAL_ERROR "man_pages.cmake: help2man ${program} failed (${status}): ${error}")
  endif()
endfunction()

set(see_also "")
foreach(line IN LISTS command_lines)
  string(REGEX REPLACE "^\n  ([a-z][a-z-]*) +(.*)$" "\\1" command "${line}")
  string(REGEX REPLACE "^\n  ([a-z][a-z-]*) +(.*)$" "\\2" description "${line}")
  set(wrapper ${OUT_DIR}/wrappers/gapwatch-${command})
  file(WRITE ${wrapper} "#!/bin/sh\nexec '${GAPWATCH}' ${command} \"$@\"\n")
  file(CHMOD ${wrapper} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
       WORLD_READ WORLD_EXECUTE)
  write_page(${wrapper} gapwatch-${command}.1 "${description}")
  string(APPEND see_also ".BR gapwatch-${command} (1),\n")
endforeach()

# gapwatch(1) names every command's page; gapwatchd(1) is the collector's help under its own name.
file(WRITE ${OUT_DIR}/wrappers/see-also.h2m
  "[SEE ALSO]\n${see_also}.BR gapwatchd (1).\nThe full documentation is in share/doc/gapwatch under the install prefix (/usr/share/doc/gapwatch from the .deb; docs/ in the source).\n")
write_page(${GAPWATCH} gapwatch.1 "why is my GPU idle? A GPU idle-gap profiler"
           --include=${OUT_DIR}/wrappers/see-also.h2m)
file(WRITE ${OUT_DIR}/wrappers/gapwatchd.h2m
  "[FILES]\n"
  ".TP\n.I lib/systemd/user/gapwatchd.service\n"
  "The systemd user unit, under the install prefix: \\fBsystemctl \\-\\-user enable \\-\\-now gapwatchd\\fR.\n"
  ".TP\n.I ~/.config/gapwatch/gapwatchd.env\n"
  "The unit's settings (optional): GAPWATCHD_SOCKET, GAPWATCHD_OUTPUT_DIR (default ~/gapwatch-recordings) "
  "and GAPWATCHD_OPTIONS (more options, such as \\fB\\-\\-metrics 9464\\fR). "
  "A commented copy is installed as share/doc/gapwatch/gapwatchd.env.\n"
  "[SEE ALSO]\n.BR gapwatch (1),\n.BR gapwatch-watch (1).\n")
get_filename_component(bin_dir ${GAPWATCH} DIRECTORY)
write_page(${bin_dir}/gapwatchd gapwatchd.1 "the gapwatch collector daemon (gapwatch collector)"
           --include=${OUT_DIR}/wrappers/gapwatchd.h2m)
