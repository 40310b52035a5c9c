// Storage allocates and frees through its device's backend (and so its caching allocator).
#include "tensor/storage.h"

#include "tensor/backend.h"

namespace rg {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = backend_for(device.type).allocate(nbytes, device.index);
}

Storage::~Storage() { backend_for(device_.type).deallocate(data_, nbytes_, device_.index); }

}  // namespace rg
