// The models layer's public API in one include: MLP, CNN, ResNet-small, make_model() and evaluate().
#pragma once
#include "models/cnn.h"
#include "models/evaluate.h"
#include "models/mlp.h"
#include "models/named.h"
#include "models/resnet_small.h"
