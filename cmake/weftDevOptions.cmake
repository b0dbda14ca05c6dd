# Compile options for weft's own targets: the library, its tests, examples
# and benchmarks. Everything is applied per target and PRIVATE, so nothing
# reaches a project that consumes weft.
#
#   weft_target_dev_options(<target>)  warnings (-Werror when
#                                      WEFT_WARNINGS_AS_ERRORS) + sanitizer
#   weft_target_sanitizer(<target>)    sanitizer only, for third-party code
#                                      built from source (GoogleTest)
#
# Included from the root CMakeLists.txt after WEFT_WARNINGS_AS_ERRORS and
# WEFT_SANITIZER are defined; the flag lists are resolved here, once, so the
# functions behave the same from any subdirectory.

include_guard(GLOBAL)

if(WEFT_SANITIZER STREQUAL "")
  set(WEFT_SANITIZER_FLAGS "")
elseif(WEFT_SANITIZER STREQUAL "thread")
  set(WEFT_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(WEFT_SANITIZER STREQUAL "address")
  set(WEFT_SANITIZER_FLAGS
    -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer)
else()
  message(FATAL_ERROR
    "WEFT_SANITIZER='${WEFT_SANITIZER}' is not supported: use '', 'thread' or 'address'.")
endif()

if(WEFT_SANITIZER_FLAGS AND NOT weft_IS_TOP_LEVEL)
  message(STATUS "weft: WEFT_SANITIZER is ignored because weft is not the top-level project")
  set(WEFT_SANITIZER_FLAGS "")
endif()

if(MSVC)
  set(WEFT_WARNING_FLAGS /W4)
  set(_weft_werror /WX)
else()
  set(WEFT_WARNING_FLAGS -Wall -Wextra -Wpedantic)
  set(_weft_werror -Werror)
endif()

if(WEFT_WARNINGS_AS_ERRORS)
  list(APPEND WEFT_WARNING_FLAGS ${_weft_werror})
elseif(NOT weft_IS_TOP_LEVEL)
  # A subproject build stays quiet in the consumer's log.
  set(WEFT_WARNING_FLAGS "")
endif()
unset(_weft_werror)

function(weft_target_sanitizer target)
  if(WEFT_SANITIZER_FLAGS)
    target_compile_options(${target} PRIVATE ${WEFT_SANITIZER_FLAGS})
    # Ignored for static archives; every executable that links weft gets the
    # same flags, and that is what pulls in the sanitizer runtime.
    target_link_options(${target} PRIVATE ${WEFT_SANITIZER_FLAGS})
  endif()
endfunction()

function(weft_target_dev_options target)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  if(WEFT_WARNING_FLAGS)
    target_compile_options(${target} PRIVATE ${WEFT_WARNING_FLAGS})
  endif()
  weft_target_sanitizer(${target})
endfunction()
