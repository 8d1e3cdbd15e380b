# Cross-compile Loom for 64-bit ARM Linux with the Debian/Ubuntu GNU cross toolchain
# (packages gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, libc6-dev-arm64-cross).
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Binaries run under qemu: qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/bin/<prog>
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(LOOM_CROSS_TRIPLE aarch64-linux-gnu CACHE STRING "cross toolchain prefix")
set(CMAKE_C_COMPILER ${LOOM_CROSS_TRIPLE}-gcc)
# project() enables C++ (the public-header check): needs g++-aarch64-linux-gnu.
set(CMAKE_CXX_COMPILER ${LOOM_CROSS_TRIPLE}-g++)

set(CMAKE_FIND_ROOT_PATH /usr/${LOOM_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Let ctest run the test binaries through qemu when it is installed.
find_program(LOOM_QEMU_AARCH64 qemu-aarch64)
if(LOOM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LOOM_QEMU_AARCH64};-L;/usr/${LOOM_CROSS_TRIPLE})
endif()
