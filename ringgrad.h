// The umbrella header: the whole public API of ringgrad.
#pragma once
#include "tensor/cuda.h"
#include "tensor/generator.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"
#include "tensor/thread_pool.h"
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "autograd/variable.h"
