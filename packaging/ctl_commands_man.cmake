# Writes a help2man --include file with a COMMANDS IN DETAIL section: each
# command's own `leasekeeper-ctl COMMAND --help`, verbatim, in the order the
# overview lists them (so a new command is in the man page with no edit
# here). Run as cmake -DCTL=<leasekeeper-ctl> -DOUTPUT=<file> -P this file.
execute_process(COMMAND ${CTL} --help
  OUTPUT_VARIABLE overview RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${CTL} --help failed (${status})")
endif()

# The overview's "Commands:" block: "  NAME   summary" lines up to a blank.
string(REPLACE "\n" ";" lines "${overview}")
set(commands "")
set(in_commands FALSE)
foreach(line IN LISTS lines)
  if(line STREQUAL "Commands:")
    set(in_commands TRUE)
  elseif(in_commands AND line STREQUAL "")
    break()
  elseif(in_commands AND line MATCHES "^  ([a-z][a-z-]*)( |$)")
    if(NOT CMAKE_MATCH_1 STREQUAL "help")
      list(APPEND commands ${CMAKE_MATCH_1})
    endif()
  endif()
endforeach()
if(commands STREQUAL "")
  message(FATAL_ERROR "no Commands: block in ${CTL} --help")
endif()

set(text "[SYNOPSIS]
.B leasekeeper\\-ctl
[\\fIGLOBAL FLAGS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR] [\\fIFLAGS\\fR] [\\fB\\-\\-\\fR \\fICMD\\fR ...]

[COMMANDS IN DETAIL]
")
foreach(command IN LISTS commands)
  execute_process(COMMAND ${CTL} ${command} --help
    OUTPUT_VARIABLE help RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${CTL} ${command} --help failed (${status})")
  endif()
  # roff: a backslash is \e; a line may not start with a control character.
  string(REPLACE "\\" "\\e" help "${help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
  string(REPLACE "-" "\\-" help "${help}")
  string(APPEND text ".SS ${command}\n.nf\n${help}.fi\n")
endforeach()
string(APPEND text "\n[SEE ALSO]\n.BR leasekeeperd (8).\n")
file(WRITE ${OUTPUT} "${text}")
