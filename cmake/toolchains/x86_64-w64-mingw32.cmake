# Cross build for 64-bit Windows with Debian's MinGW-w64 (the -posix
# variant: its std::thread and std::mutex sit on winpthreads), run under
# wine: ctest starts every test and example through
# CMAKE_CROSSCOMPILING_EMULATOR, so `ctest` works as on a native build.
#
#   cmake --preset mingw          (scripts/deps.sh test installs the packages:
#                                  g++-mingw-w64-x86-64-posix, wine64)
#
# Linked statically (-static): the executables need no MinGW DLL next to
# them, so wine runs them from the build tree as they are.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(WEFT_MINGW_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${WEFT_MINGW_TRIPLE}-gcc-posix)
set(CMAKE_CXX_COMPILER ${WEFT_MINGW_TRIPLE}-g++-posix)
set(CMAKE_RC_COMPILER ${WEFT_MINGW_TRIPLE}-windres)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)

# Headers and libraries from the target's root only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${WEFT_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config sees no .pc file of the host (there are none for the target).
set(ENV{PKG_CONFIG_LIBDIR} /usr/${WEFT_MINGW_TRIPLE}/lib/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# WEFT_TEST_EMULATOR tells the tests (tests/support/support.hpp) what runs
# them. wine keeps its prefix (its C: drive and registry, made on the first
# start, which takes a while) in the build tree, and stays quiet.
find_program(WEFT_WINE64 NAMES wine64 PATHS /usr/lib/wine NO_DEFAULT_PATH)
find_program(WEFT_WINE64 NAMES wine64 wine)
set(CMAKE_CROSSCOMPILING_EMULATOR env WEFT_TEST_EMULATOR=wine64
  WINEPREFIX=${CMAKE_BINARY_DIR}/wine WINEDEBUG=-all ${WEFT_WINE64})
