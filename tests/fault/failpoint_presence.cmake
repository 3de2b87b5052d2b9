# Whether a build holds the fault suite's failpoint
# LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND (cluster/etcd_log.h) exactly when
# it was configured with it: leasekeeperd's start-up warning is in the
# binary, and the define is in the compile commands of the three files that
# use it and of no other, iff EXPECT is ON. A normal build that caught the
# define by accident (a stray add_compile_definitions, a cached option)
# fails here.
#   cmake -DBINARY=bin/leasekeeperd -DCOMMANDS=compile_commands.json
#         -DEXPECT=OFF -P failpoint_presence.cmake
set(marker "FAILPOINT unguarded-append")
set(define "LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND")
file(STRINGS "${BINARY}" warning REGEX "${marker}" LIMIT_COUNT 1)
file(READ "${COMMANDS}" commands)
string(JSON count LENGTH "${commands}")
set(defined_in "")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON command GET "${commands}" ${i} command)
  if(command MATCHES "-D${define}")
    string(JSON file GET "${commands}" ${i} file)
    get_filename_component(name "${file}" NAME)
    list(APPEND defined_in "${name}")
  endif()
endforeach()
list(SORT defined_in)
if(EXPECT)
  set(expected_files "etcd_lease.cc;etcd_log.cc;main.cc")
  if(NOT warning)
    message(FATAL_ERROR "${BINARY} lacks the failpoint's warning")
  endif()
else()
  set(expected_files "")
  if(warning)
    message(FATAL_ERROR "${BINARY} holds the failpoint: ${warning}")
  endif()
endif()
if(NOT "${defined_in}" STREQUAL "${expected_files}")
  message(FATAL_ERROR "-D${define} is given to [${defined_in}], expected "
                      "[${expected_files}]")
endif()
message(STATUS "failpoint ${define}: ${EXPECT} (files: [${defined_in}])")
