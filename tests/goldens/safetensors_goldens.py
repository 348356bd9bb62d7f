# Reference safetensors files laid out exactly as HF's serializer (huggingface/safetensors, tensor.rs prepare())
# writes them, plus a JSON sidecar per file with the values each tensor holds. Torch-free: struct only.
#
# The layout, from the reference implementation:
#   - tensors sorted by dtype descending in the Rust enum order (BOOL < U8 < I8 < ... < I16 < U16 < F16 < BF16
#     < I32 < U32 < F32 < C64 < F64 < I64 < U64), then by name (bytewise), data packed in that order;
#   - header = serde_json compact JSON: "__metadata__" first when given, then the tensors in that order, each
#     {"dtype":..,"shape":[..],"data_offsets":[begin,end]}; strings escaped as serde_json does (", \, control
#     characters; UTF-8 verbatim), which json.dumps(ensure_ascii=False) matches;
#   - header padded with spaces to a multiple of 8; then its length as a little-endian u64 in front.
# The Rust writer keeps metadata in a HashMap, so with several keys their order is arbitrary; this script sorts
# them (as berth does), and the single-key files are unambiguous.
import json
import math
import os
import struct
import sys

# The Rust enum order of the dtypes berth supports; the writer sorts by its position, descending.
ENUM_ORDER = ["BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "F64", "I64"]
PACK = {"F64": "<d", "F32": "<f", "F16": "<e", "I64": "<q", "I32": "<i", "I16": "<h", "I8": "<b", "U8": "<B",
        "BOOL": "<?"}


def encode(dtype, value):
    if dtype == "BF16":
        # bfloat16 is the top half of a float32; the values below are exact in bfloat16, so no rounding choice.
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        assert bits & 0xFFFF == 0, value
        return struct.pack("<H", bits >> 16)
    return struct.pack(PACK[dtype], value)


def stored(dtype, value):
    """The value as the file holds it (float32/float16 round), for the sidecar."""
    if dtype in ("F32", "F16"):
        return struct.unpack(PACK[dtype], struct.pack(PACK[dtype], value))[0]
    return value


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


def serialize(tensors, metadata):
    order = sorted(tensors, key=lambda t: (-ENUM_ORDER.index(t["dtype"]), t["name"].encode("utf-8")))
    header = {}
    if metadata is not None:
        header["__metadata__"] = dict(sorted(metadata.items(), key=lambda kv: kv[0].encode("utf-8")))
    data = b""
    for t in order:
        blob = b"".join(encode(t["dtype"], v) for v in t["values"])
        header[t["name"]] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


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


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for case, (tensors, metadata) in CASES.items():
        with open(os.path.join(out_dir, case + ".safetensors"), "wb") as f:
            f.write(serialize(tensors, metadata))
        sidecar = {"metadata": metadata or {},
                   "tensors": {t["name"]: {"dtype": t["dtype"], "shape": t["shape"],
                                           "values": [stored(t["dtype"], v) for v in t["values"]]}
                               for t in tensors}}
        with open(os.path.join(out_dir, case + ".json"), "w", encoding="utf-8") as f:
            json.dump(sidecar, f, ensure_ascii=False)
    # The first file of the Rust crate's own tests (test_serialization), for the layout above to be checked
    # against: {"attn.0": F32 [1, 2, 3] = 0..5}, 8 + 64 header bytes.
    rust = serialize([{"name": "attn.0", "dtype": "F32", "shape": [1, 2, 3], "values": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}],
                     None)
    expected = (struct.pack("<Q", 64) + b'{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}'
                + struct.pack("<6f", 0, 1, 2, 3, 4, 5))
    assert rust == expected, rust
    assert serialize([], None) == bytes([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32])


if __name__ == "__main__":
    main()
