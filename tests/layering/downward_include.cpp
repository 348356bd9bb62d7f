// Compiled as a source of the dist layer: headers of dist and of the layers below it (optim, core) are in its
// view, so this compiles; the control for upward_include.cpp.
#include "berth/core/error.h"
#include "berth/dist/gradient_sync.h"
#include "berth/optim/adamw.h"

namespace berth::dist {
// One symbol, so the object is not empty.
int layering_probe_compiles() { return 0; }
}  // namespace berth::dist
