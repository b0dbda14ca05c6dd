# weft_add_mpi_test(<name> <ranks> <target>): runs <target> under mpiexec on
# <ranks> ranks as the ctest test <name>. Shared by tests/mpi/ and the
# *_mpi.cpp examples.
#
# - Shared memory only (btl self,vader): this is one machine, and Open MPI's
#   TCP transport takes two locks in opposite orders inside MPI_Init, which
#   ThreadSanitizer reports as a possible deadlock (not weft's).
# - --oversubscribe: more ranks than cores (this machine has 2).
# - As root, --allow-run-as-root (containers, CI).
# - Under AddressSanitizer, LeakSanitizer must see whole stacks to tell Open
#   MPI's deliberate allocations (kept from MPI_Init until exit) from weft's:
#   full unwinding, MCA components kept loaded, and tests/mpi/lsan.supp,
#   which names only Open MPI's libraries.

include_guard(GLOBAL)

function(weft_add_mpi_test name ranks target)
  set(flags --oversubscribe --mca btl self,vader)
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(uid STREQUAL "0")
    list(APPEND flags --allow-run-as-root)
  endif()
  set(environment "")
  if(WEFT_SANITIZER STREQUAL "address")
    set(supp "${PROJECT_SOURCE_DIR}/tests/mpi/lsan.supp")
    set(environment
      "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0"
      "LSAN_OPTIONS=suppressions=${supp}:fast_unwind_on_malloc=0"
      "OMPI_MCA_mca_base_component_disable_dlclose=1")
    list(APPEND flags -x ASAN_OPTIONS -x LSAN_OPTIONS)
  elseif(WEFT_SANITIZER STREQUAL "thread")
    list(APPEND flags -x TSAN_OPTIONS)
  endif()
  add_test(NAME ${name}
    COMMAND "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${flags}
            $<TARGET_FILE:${target}>)
  set_tests_properties(${name} PROPERTIES TIMEOUT 240 LABELS mpi)
  if(environment)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${environment}")
  endif()
endfunction()
