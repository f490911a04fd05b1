#!/usr/bin/env python3
"""Writes the gguf fuzz target's seeds for the quantized types (tests/fuzz/gguf/):
  tensors-quantized-every-type.gguf  two blocks of each supported quantized type, as 2-D
                                     tensors (the harness dequantizes, packs and multiplies
                                     them), one block with NaN and one with Inf scales;
  model-llama-quantized.gguf         a 1-layer llama whose matrices are Q4_0, Q5_0, Q5_1,
                                     Q8_0 and IQ4_NL (32-wide rows fit the target's 4 KiB
                                     inputs; K-quant rows are 256 wide and do not);
  tensor-unsupported-iq2.gguf        a tensor of a type tandem refuses by name (IQ2_XXS).
Deterministic (seeded); run from the repository root: tests/fuzz/make_gguf_seeds.py"""
import random
import struct

ALIGN = 32
rng = random.Random(20261126)

# type id: (block elements, block bytes, offsets of F16 scale fields in a block)
TYPES = {
    'q4_0': (2, 32, 18, [0]), 'q4_1': (3, 32, 20, [0, 2]), 'q5_0': (6, 32, 22, [0]),
    'q5_1': (7, 32, 24, [0, 2]), 'q8_0': (8, 32, 34, [0]), 'q2_k': (10, 256, 84, [80, 82]),
    'q3_k': (11, 256, 110, [108]), 'q4_k': (12, 256, 144, [0, 2]),
    'q5_k': (13, 256, 176, [0, 2]), 'q6_k': (14, 256, 210, [208]),
    'iq4_nl': (20, 32, 18, [0]), 'iq4_xs': (23, 256, 136, [0]),
}
F16_SMALL, F16_NAN, F16_INF = 0x211F, 0x7E00, 0x7C00


def blocks(name, count, scale=F16_SMALL):
    _, _, size, scales = TYPES[name]
    out = bytearray()
    for _ in range(count):
        b = bytearray(rng.getrandbits(8) for _ in range(size))
        for at in scales:
            struct.pack_into('<H', b, at, scale)
        out += b
    return bytes(out)


def gguf_string(s):
    data = s.encode()
    return struct.pack('<Q', len(data)) + data


def kv(key, value):
    if isinstance(value, str):
        return gguf_string(key) + struct.pack('<I', 8) + gguf_string(value)
    if isinstance(value, float):
        return gguf_string(key) + struct.pack('<If', 6, value)
    return gguf_string(key) + struct.pack('<II', 4, value)


def write(path, metadata, tensors):
    """tensors: (name, dims (ggml order), type id, data bytes)."""
    header = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(metadata))
    header += b''.join(kv(k, v) for k, v in metadata)
    offset, infos, data = 0, b'', b''
    for name, dims, type_id, payload in tensors:
        infos += gguf_string(name) + struct.pack('<I', len(dims))
        infos += b''.join(struct.pack('<Q', d) for d in dims) + struct.pack('<IQ', type_id, offset)
        data += payload + b'\0' * (-len(payload) % ALIGN)
        offset = len(data)
    head = header + infos
    head += b'\0' * (-len(head) % ALIGN)
    with open(path, 'wb') as f:
        f.write(head + data)
    return len(head + data)


def every_type():
    tensors = []
    for name, (type_id, elements, _, _) in TYPES.items():
        tensors.append((name, [elements, 2], type_id, blocks(name, 2)))
    tensors.append(('nan_scale', [32], 8, blocks('q8_0', 1, F16_NAN)))
    tensors.append(('inf_scale', [256], 12, blocks('q4_k', 1, F16_INF)))
    return write('tests/fuzz/gguf/tensors-quantized-every-type.gguf',
                 [('general.architecture', 'none')], tensors)


def f32(values):
    return b''.join(struct.pack('<f', v) for v in values)


def model():
    e, ff, kv_dim, vocab = 32, 8, 8, 8  # 4 heads of 8, 1 KV head
    meta = [('general.architecture', 'llama'), ('llama.embedding_length', e),
            ('llama.block_count', 1), ('llama.attention.head_count', 4),
            ('llama.attention.head_count_kv', 1), ('llama.feed_forward_length', ff),
            ('llama.context_length', 64), ('llama.rope.freq_base', 10000.0),
            ('llama.attention.layer_norm_rms_epsilon', 1e-5)]
    ones = f32([1.0] * e)
    down = b''.join(struct.pack('<e', rng.uniform(-0.5, 0.5)) for _ in range(e * ff))
    tensors = [
        ('token_embd.weight', [e, vocab], 2, blocks('q4_0', vocab)),
        ('blk.0.attn_norm.weight', [e], 0, ones),
        ('blk.0.attn_q.weight', [e, e], 2, blocks('q4_0', e)),
        ('blk.0.attn_k.weight', [e, kv_dim], 20, blocks('iq4_nl', kv_dim)),
        ('blk.0.attn_v.weight', [e, kv_dim], 6, blocks('q5_0', kv_dim)),
        ('blk.0.attn_output.weight', [e, e], 2, blocks('q4_0', e)),
        ('blk.0.ffn_norm.weight', [e], 0, ones),
        ('blk.0.ffn_gate.weight', [e, ff], 7, blocks('q5_1', ff)),
        ('blk.0.ffn_up.weight', [e, ff], 8, blocks('q8_0', ff)),
        ('blk.0.ffn_down.weight', [ff, e], 1, down),  # 8-wide rows: no 32-block type fits
        ('output_norm.weight', [e], 0, ones),
    ]
    return write('tests/fuzz/gguf/model-llama-quantized.gguf', meta, tensors)


def unsupported():
    return write('tests/fuzz/gguf/tensor-unsupported-iq2.gguf',
                 [('general.architecture', 'none')], [('iq2', [256], 16, bytes(66))])


if __name__ == '__main__':
    for make in (every_type, model, unsupported):
        print(make.__name__, make(), 'bytes')
