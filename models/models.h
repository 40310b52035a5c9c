// The models layer's public API in one include: MLP, CNN, ResNet-small and make_model().
#pragma once
#include "models/cnn.h"
#include "models/mlp.h"
#include "models/named.h"
#include "models/resnet_small.h"
