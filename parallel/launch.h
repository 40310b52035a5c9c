// Starting a data-parallel program's ranks, the way torchrun/mpirun programs do: on
// rank-threads of this process (the local world) or as this process's rank of an mpirun
// job, with one rule for failures: a rank that fails ends the whole job.
#pragma once
#include <functional>
#include <memory>
#include <optional>

#include "parallel/process_group.h"

namespace rg::parallel {

// Where mpirun placed this process, from OpenMPI's OMPI_COMM_WORLD_{SIZE,RANK,LOCAL_RANK}
// (set before MPI starts, so a program can read them while parsing its flags); nullopt when
// the program was not started by mpirun.
struct MpirunPlacement {
  int world_size = 1;
  int rank = 0;
  int local_rank = 0;  // on this node: which of its GPUs the process takes
};
std::optional<MpirunPlacement> mpirun_placement();

struct WorldLaunch {
  ProcessGroupOptions group = {};  // backend "local": rank-threads; "mpi" or "nccl": under mpirun
  int local_world_size = 1;   // the local world's ranks (under mpirun the job has its own)
  // Under mpirun, the exit code of the job a rank's error ends; 1 when unset.
  std::function<int(const std::exception&)> exit_code = nullptr;
};

// Runs fn(group) on every rank. Locally: run_local_world (a rank's error is rethrown here,
// after the others' waits ended). Under mpirun: once, as this process's rank; an error is
// printed as "error: rank R: <message>" in one write (the ranks share stderr) and the job is
// aborted (MPI_Abort), as the other processes would otherwise wait for this one until their
// timeout.
void run_world(const WorldLaunch& launch, int argc, char** argv,
               const std::function<void(std::shared_ptr<ProcessGroup>)>& fn);

}  // namespace rg::parallel
