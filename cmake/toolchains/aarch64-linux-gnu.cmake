# Cross build for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu, run
# under qemu-user: ctest starts every test and example through
# CMAKE_CROSSCOMPILING_EMULATOR, so `ctest` works as on a native build.
#
#   cmake --preset aarch64        (scripts/deps.sh test installs the packages:
#                                  g++-aarch64-linux-gnu, qemu-user)
#
# qemu-user runs the AArch64 code on the host's memory ordering, and weaker:
# it puts no fence between an `stlr` and a later `ldar`, which x86 may then
# reorder, so even seq_cst store buffering fails under it
# (tests/support/litmus.hpp measures it; the deque's racing tests are skipped
# when it does). These tests check the port, not the memory-order arguments,
# which docs/deque.md and docs/sleep.md make for a weakly ordered CPU.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(WEFT_AARCH64_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${WEFT_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${WEFT_AARCH64_TRIPLE}-g++)

# Headers and libraries from the target's root only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${WEFT_AARCH64_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config sees the target's .pc files only (none unless arm64 -dev
# packages are installed), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${WEFT_AARCH64_TRIPLE}/pkgconfig:/usr/${WEFT_AARCH64_TRIPLE}/lib/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# WEFT_TEST_EMULATOR tells the tests (tests/support/support.hpp) what runs
# them, for the few that qemu-user cannot run (a fork of a multi-threaded
# process).
set(CMAKE_CROSSCOMPILING_EMULATOR env WEFT_TEST_EMULATOR=qemu-aarch64
  qemu-aarch64 -L /usr/${WEFT_AARCH64_TRIPLE})
