# Writes OUTPUT from version.cc.in with the source tree's commit. Run at
# every build (cmake -P); configure_file leaves OUTPUT untouched when its
# content is unchanged, so nothing relinks unless the commit moved.
# Inputs: SOURCE_DIR, TEMPLATE, OUTPUT, LEASEKEEPER_VERSION.
find_package(Git QUIET)
set(LEASEKEEPER_COMMIT "unknown")
if(GIT_FOUND)
  execute_process(
    COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
    OUTPUT_VARIABLE described
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET
    RESULT_VARIABLE result)
  if(result EQUAL 0 AND NOT described STREQUAL "")
    set(LEASEKEEPER_COMMIT "${described}")
  endif()
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
