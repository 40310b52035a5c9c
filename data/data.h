// The data layer's public API in one include: datasets, transforms, samplers, DataLoader,
// data sets by name.
#pragma once
#include "data/cifar.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/io.h"
#include "data/loader.h"
#include "data/named.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "data/transforms.h"
