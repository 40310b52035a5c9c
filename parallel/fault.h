// GradientFault: a fault injected into one worker's gradient for one step (lecture claim
// C14: what a silent gradient error does, and what catches it). Where each kind strikes is
// the wrapper's: DistributedDataParallel::inject_fault, DataParallel::inject_fault.
#pragma once

namespace rg::parallel {

enum class GradientFault {
  drop,     // the worker's contribution is lost (zeros in its place)
  corrupt,  // the worker's contribution is wrong
};

}  // namespace rg::parallel
