#include "parallel/launch.h"

#include <cstdlib>
#include <iostream>

namespace rg::parallel {

namespace {
std::optional<int> integer_from_env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::optional<int>(std::atoi(value)) : std::nullopt;
}
}  // namespace

std::optional<MpirunPlacement> mpirun_placement() {
  const std::optional<int> size = integer_from_env("OMPI_COMM_WORLD_SIZE");
  if (!size) return std::nullopt;
  return MpirunPlacement{.world_size = *size,
                         .rank = integer_from_env("OMPI_COMM_WORLD_RANK").value_or(0),
                         .local_rank = integer_from_env("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0)};
}

void run_world(const WorldLaunch& launch, int argc, char** argv,
               const std::function<void(std::shared_ptr<ProcessGroup>)>& fn) {
  if (launch.group.backend == "local") {
    run_local_world(launch.local_world_size, fn, launch.group);
    return;
  }
  auto pg = init_process_group(launch.group, argc, argv);
  try {
    fn(pg);
  } catch (const std::exception& e) {
    const auto* error = dynamic_cast<const Error*>(&e);
    std::cerr << "error: " + from_rank(pg->rank(), error ? error->message() : e.what()) + "\n" << std::flush;
    pg->abort(launch.exit_code ? launch.exit_code(e) : 1);
  }
}

}  // namespace rg::parallel
