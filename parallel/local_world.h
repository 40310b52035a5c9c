// The `local` backend: N ranks as N threads of one process. Messages are copied straight
// from the sender's buffer by the receiver; the library collectives read every rank's
// buffer in place. Waits are condition variables with deadlines.
#pragma once
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace rg::parallel {

// One communicator per rank of a fresh world of `size` ranks sharing memory.
std::vector<std::unique_ptr<Communicator>> make_local_world(int size);

}  // namespace rg::parallel
