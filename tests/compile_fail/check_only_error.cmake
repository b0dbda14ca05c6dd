# cmake -DCOMPILER=... -DINCLUDE_DIR=... -DSNIPPET=... -P check_only_error.cmake
# Compiles SNIPPET (syntax only), whose first line is
# "// expect-only: <text>", and succeeds when it fails to compile with
# exactly one line of output that says "error:", containing <text> (as a
# literal): weft's message is the first error a user reads, not one buried
# among others (notes about why it failed may follow it).
file(READ "${SNIPPET}" source)
# ';' would split lists below: stand-ins for it, in the text and the output.
string(REPLACE ";" "<semicolon>" source "${source}")
if(NOT source MATCHES "^// expect-only: ([^\n]+)")
  message(FATAL_ERROR "${SNIPPET}: the first line must be \"// expect-only: <message>\"")
endif()
set(expected "${CMAKE_MATCH_1}")
execute_process(
  COMMAND "${COMPILER}" -std=c++20 -fsyntax-only "-I${INCLUDE_DIR}" "${SNIPPET}"
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
if(result EQUAL 0)
  message(FATAL_ERROR "${SNIPPET} compiled; it must not")
endif()
string(REPLACE ";" "<semicolon>" output "${output}")
string(REGEX MATCHALL "[^\n]*error:[^\n]*" errors "${output}")
list(LENGTH errors count)
set(first_error "")
if(count GREATER 0)
  list(GET errors 0 first_error)
endif()
string(FIND "${first_error}" "${expected}" at)
if(at EQUAL -1 OR NOT count EQUAL 1)
  message(FATAL_ERROR
    "weft's message is not the only error (${count} errors)\n  expected: ${expected}\n"
    "  first error: ${first_error}\n--- compiler output ---\n${output}")
endif()
