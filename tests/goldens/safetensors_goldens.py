#!/usr/bin/env python3
# Reference safetensors files written by HF's safetensors library itself (safetensors==0.8.0, pinned in
# scripts/requirements.txt: safetensors.torch.save, the Rust serializer), from torch tensors (torch==2.15.0),
# plus a JSON sidecar per file with the values each tensor holds, as safetensors.torch.load_file reads them
# back. The files are the goldens berth's reader must read and its writer must reproduce byte for byte, and
# the seeds of the fuzz.safetensors_header fuzzer.
#
# The writer keeps __metadata__ in a Rust HashMap, so with several keys their order in the header is arbitrary
# (it changes from call to call). berth writes them sorted (bytewise); for the one case with several keys the
# script keeps the library's output of a call that happened to write them in that order.
#
# Usage (run with scripts/python): safetensors_goldens.py OUT_DIR
import json
import math
import os
import struct
import sys

import numpy as np
import safetensors
import safetensors.torch
import torch

NUMPY_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "I32": np.int32,
                "I64": np.int64, "F16": np.float16, "F32": np.float32, "F64": np.float64}


def values_for(dtype, count, salt):
    out = []
    for i in range(count):
        k = i + 3 * salt
        if dtype == "BOOL":
            out.append((k * 7) % 3 == 0)
        elif dtype in ("I8",):
            out.append((k * 37) % 256 - 128)
        elif dtype == "U8":
            out.append((k * 53) % 256)
        elif dtype == "I16":
            out.append((k * 4099) % 65536 - 32768)
        elif dtype == "I32":
            out.append((k * 2654435761) % 2**32 - 2**31)
        elif dtype == "I64":
            out.append((k * 0x9E3779B97F4A7C15) % 2**64 - 2**63)
        elif dtype == "BF16":
            out.append((k - 5) * 0.375)
        elif dtype == "F16":
            out.append((k - 7) / 3.0)
        else:
            out.append(math.sin(k + 1) * 10 ** (k % 5))
    return out


def tensor(name, dtype, shape, salt=0):
    count = math.prod(shape)
    return {"name": name, "dtype": dtype, "shape": shape, "values": values_for(dtype, count, salt)}


CASES = {
    # one tensor per dtype, names chosen so that name order and dtype order disagree
    "all_dtypes": ([tensor("a_bool", "BOOL", [2, 3]), tensor("b_u8", "U8", [5]), tensor("c_i8", "I8", [2, 2]),
                    tensor("d_i16", "I16", [3]), tensor("e_f16", "F16", [2, 3]), tensor("f_bf16", "BF16", [4]),
                    tensor("g_i32", "I32", [3, 1]), tensor("h_f32", "F32", [2, 3, 2]),
                    tensor("i_f64", "F64", [3]), tensor("j_i64", "I64", [2]),
                    tensor("aa_f32", "F32", [1], 1), tensor("Z_f32", "F32", [2], 2)],
                   {"format": "pt"}),
    # a scalar, empty tensors (one zero dimension, zero-size shapes at the same offset), a one-byte tensor
    # that leaves the next unaligned in HF's layout too
    "scalars_and_empty": ([tensor("scalar", "F32", []), tensor("empty_rows", "F32", [0, 3]),
                           tensor("empty_cols", "I64", [2, 0]), tensor("flag", "BOOL", []),
                           tensor("byte", "U8", [1], 4), tensor("half_scalar", "F16", [])],
                          None),
    "no_tensors": ([], None),
    "metadata_only": ([], {"format": "pt"}),
    # names and metadata that need JSON escaping, and UTF-8 kept verbatim
    "escaped_names": ([tensor('quote"back\\slash', "F32", [2]), tensor("tab\there\nnewline", "I32", [1]),
                       tensor("ctl\x01\x1f\x7f", "U8", [2]), tensor("unicode é 中文 🙂", "BF16", [2]),
                       tensor("path/with/slashes", "I8", [1])],
                      {"quote\"": "back\\slash\n", "é": "中文 🙂", "empty": ""}),
    # the shape of a BERT checkpoint: many tensors of one dtype, dotted names
    "bert_like": ([tensor("bert.embeddings.word_embeddings.weight", "F32", [10, 4], 1),
                   tensor("bert.embeddings.position_ids", "I64", [1, 6], 2),
                   tensor("bert.embeddings.LayerNorm.weight", "F32", [4], 3),
                   tensor("bert.encoder.layer.0.attention.self.query.weight", "F32", [4, 4], 4),
                   tensor("bert.encoder.layer.10.attention.self.query.weight", "F32", [4, 4], 5),
                   tensor("bert.encoder.layer.2.attention.self.query.weight", "F32", [4, 4], 6),
                   tensor("classifier.bias", "F32", [2], 7)],
                  {"format": "pt"}),
}


def to_torch(t):
    """The tensor of a case: the values rounded once to its dtype (numpy converts from double directly)."""
    if t["dtype"] == "BF16":
        out = torch.tensor(t["values"], dtype=torch.float64).to(torch.bfloat16).reshape(t["shape"])
        assert out.double().reshape(-1).tolist() == t["values"], t["name"]  # exact in bfloat16: no rounding
        return out
    return torch.from_numpy(np.array(t["values"], dtype=NUMPY_DTYPES[t["dtype"]]).reshape(t["shape"]))


def header_of(data):
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n])


def save(tensors, metadata):
    """safetensors.torch.save's bytes; with several metadata keys, those of a call that wrote them sorted."""
    want = None if metadata is None else sorted(metadata, key=lambda k: k.encode("utf-8"))
    for _ in range(1000):
        data = safetensors.torch.save(tensors, metadata)
        if want is None or list(header_of(data)["__metadata__"]) == want:
            return data
    raise RuntimeError("safetensors never wrote the metadata keys sorted in 1000 calls")


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for case, (tensors, metadata) in CASES.items():
        path = os.path.join(out_dir, case + ".safetensors")
        data = save({t["name"]: to_torch(t) for t in tensors}, metadata)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        loaded = safetensors.torch.load_file(path)
        assert sorted(loaded) == sorted(t["name"] for t in tensors), case
        with safetensors.safe_open(path, framework="pt") as f:
            assert (f.metadata() or {}) == (metadata or {}), case
        sidecar = {"metadata": metadata or {},
                   "tensors": {t["name"]: {"dtype": t["dtype"], "shape": t["shape"],
                                           "values": loaded[t["name"]].reshape(-1).tolist()}
                               for t in tensors}}
        with open(os.path.join(out_dir, case + ".json"), "w", encoding="utf-8") as f:
            json.dump(sidecar, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
