# `cmake --install build --prefix P`: the libraries and the CUDA plugin beside them in P/lib,
# the headers in P/include/ringgrad (so both <ringgrad/ringgrad.h> and the headers' own
# "tensor/tensor.h" resolve), the programs in P/bin, a CMake package
# (find_package(ringgrad) -> ringgrad::ringgrad and one target per layer) and ringgrad.pc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The umbrella target: every layer, as <ringgrad/ringgrad.h> includes them all.
add_library(ringgrad INTERFACE)
target_link_libraries(ringgrad INTERFACE ringgrad_tensor ringgrad_autograd ringgrad_report ringgrad_data
                      ringgrad_nn ringgrad_models ringgrad_parallel)
add_library(ringgrad::ringgrad ALIAS ringgrad)

set(layers tensor autograd report data nn models parallel)
set(layer_targets)
foreach(layer ${layers})
  set_target_properties(ringgrad_${layer} PROPERTIES EXPORT_NAME ${layer})
  list(APPEND layer_targets ringgrad_${layer})
endforeach()
install(TARGETS ${layer_targets} ringgrad EXPORT ringgradTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET ringgrad_cuda)
  install(TARGETS ringgrad_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})  # beside libringgrad_tensor, where it is looked for
endif()
install(TARGETS ringgrad-train ringgrad-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The public headers. Left out: the backends' insides, which include third-party headers
# (OpenBLAS, MPI, nlohmann-json) a user's program should not need.
install(FILES ringgrad.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringgrad)
foreach(layer ${layers})
  install(DIRECTORY ${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringgrad/${layer}
          FILES_MATCHING PATTERN "*.h"
          PATTERN "cpu" EXCLUDE PATTERN "cuda" EXCLUDE
          PATTERN "json_util.h" EXCLUDE PATTERN "mpi_communicator.h" EXCLUDE)
endforeach()

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ringgrad)
install(EXPORT ringgradTargets NAMESPACE ringgrad:: DESTINATION ${package_dir})
configure_package_config_file(cmake/ringgradConfig.cmake.in ${PROJECT_BINARY_DIR}/ringgradConfig.cmake
                              INSTALL_DESTINATION ${package_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ringgradConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ringgradConfig.cmake ${PROJECT_BINARY_DIR}/ringgradConfigVersion.cmake
        DESTINATION ${package_dir})

configure_file(cmake/ringgrad.pc.in ${PROJECT_BINARY_DIR}/ringgrad.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ringgrad.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
