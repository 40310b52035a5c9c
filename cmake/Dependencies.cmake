# Third-party libraries, all from Debian packages (scripts/run.sh installs them).
# OpenBLAS is found directly rather than through FindBLAS: Debian's generic libblas.so may
# point at the slow reference BLAS, and we need openblas_set_num_threads().
# The suffixes also find packages unpacked under a CMAKE_PREFIX_PATH (scripts/gpu-check.sh).
find_path(OPENBLAS_INCLUDE_DIR cblas.h REQUIRED
          PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread openblas-pthread openblas)
find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED
             PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread openblas-pthread)
add_library(ringgrad_openblas INTERFACE)
target_include_directories(ringgrad_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(ringgrad_openblas INTERFACE ${OPENBLAS_LIBRARY})
message(STATUS "OpenBLAS: ${OPENBLAS_LIBRARY}")

find_package(Threads REQUIRED)
if(RINGGRAD_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
