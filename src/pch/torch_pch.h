// Precompiled torch headers shared by every berth target (never included by public headers).
#pragma once
#include <torch/torch.h>
