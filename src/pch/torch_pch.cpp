// Anchor translation unit for the shared torch precompiled header (<torch/torch.h>; never in public headers).
