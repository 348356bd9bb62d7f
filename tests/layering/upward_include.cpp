// Compiled as a source of the dist layer: it includes a header of train, the layer above dist, which the
// build must refuse (tests/CMakeLists.txt expects "No such file or directory" for it).
#include "berth/train/trainer.h"
