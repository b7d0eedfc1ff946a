#!/usr/bin/env python3
"""Writes the golden files of tests/io/*_test.cpp with NumPy, PIL and PyTorch (run once; the
outputs are committed, so the tests need no Python). Usage: /usr/bin/python3 make_golden.py
(from any directory; writes next to this script). numpy 1.24, Pillow 9.4, torch 1.13."""
import os

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def out(*parts):
    path = os.path.join(HERE, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


# Six values per kind, the same table as npy_test.cpp's expected_values().
def values(kind, size):
    if kind == 'b':
        return [True, False, True, True, False, False]
    if kind == 'i':
        bits = 8 * size
        return [0, 1, -1, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 42]
    if kind == 'u':
        bits = 8 * size
        hi = 2 ** bits - 1 if size < 8 else 2 ** 63 - 1  # uint64 above int64 is tested by hand
        return [0, 1, 2, hi - 1, hi, 42]
    return [0.0, 1.5, -2.25, 1024.0, -0.0, 3.0]


def npy_dtypes():
    yield '|b1'
    for kind in 'iu':
        for size in (1, 2, 4, 8):
            yield ('|' if size == 1 else '<') + f'{kind}{size}'
            if size > 1:
                yield f'>{kind}{size}'
    for size in (2, 4, 8):
        yield f'<f{size}'
        yield f'>f{size}'


def write_npy():
    for descr in npy_dtypes():
        a = np.array(values(descr[1], int(descr[2])), dtype=np.dtype(descr)).reshape(2, 3)
        name = descr.replace('<', 'le_').replace('>', 'be_').replace('|', '')
        np.save(out('npy', f'{name}.npy'), a)
    base = np.arange(24, dtype='<f4').reshape(2, 3, 4)
    np.save(out('npy', 'arange_f4.npy'), base)  # save_npy must write these bytes exactly
    np.save(out('npy', 'fortran_f4.npy'), np.asfortranarray(base))
    np.save(out('npy', 'fortran_be_i2.npy'), np.asfortranarray(base.astype('>i2')))
    for version in ((2, 0), (3, 0)):
        with open(out('npy', f'version{version[0]}.npy'), 'wb') as f:
            np.lib.format.write_array(f, base, version=version)
    np.save(out('npy', 'scalar_f8.npy'), np.float64(3.5))
    np.save(out('npy', 'empty_f4.npy'), np.zeros((0, 3), dtype='<f4'))
    np.savez(out('npy', 'stored.npz'), a=base, b=np.arange(5, dtype='<i8'), c=base.astype('>f8'))
    np.savez_compressed(out('npy', 'compressed.npz'), a=base, b=np.arange(5, dtype='<i8'), c=base.astype('>f8'))
    # Zip64 central directory and end records, as zipfile writes them past 4 GiB: its limits
    # lowered so a small archive takes the same path.
    import zipfile
    limits = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
    try:
        np.savez(out('npy', 'zip64.npz'), a=base, b=np.arange(5, dtype='<i8'), c=base.astype('>f8'))
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limits
    assert (np.load(out('npy', 'zip64.npz'))['a'] == base).all()


def chw(a):
    return np.ascontiguousarray(a.transpose(2, 0, 1) if a.ndim == 3 else a[None])


def write_images():
    rng = np.random.default_rng(29)
    rgb = rng.integers(0, 256, size=(7, 9, 3), dtype=np.uint8)
    gray = rng.integers(0, 256, size=(5, 6), dtype=np.uint8)
    alpha = rng.integers(0, 256, size=(7, 9, 1), dtype=np.uint8)
    images = {
        'rgb.png': Image.fromarray(rgb, 'RGB'),
        'gray.png': Image.fromarray(gray, 'L'),
        'rgba.png': Image.fromarray(np.concatenate([rgb, alpha], axis=2), 'RGBA'),
        'palette.png': Image.fromarray(rgb, 'RGB').quantize(16),
        'gray16.png': Image.fromarray(rng.integers(0, 65536, size=(4, 5)).astype(np.uint16), 'I;16'),
    }
    for name, img in images.items():
        img.save(out('images', name))
    # Palettes with a tRNS chunk (transparency is dropped, as convert('RGB') drops it): 8 and 2 bits.
    for name, colors, bits in (('palette_trns.png', 16, 8), ('palette2_trns.png', 4, 2)):
        Image.fromarray(rgb, 'RGB').quantize(colors).save(out('images', name), transparency=3, bits=bits)
    Image.fromarray(rgb, 'RGB').save(out('images', 'rgb.jpg'), quality=90)
    Image.fromarray(gray, 'L').save(out('images', 'gray.jpg'), quality=90)
    # What PIL decodes, as uint8 [C, H, W]: RGB images through convert('RGB'), gray as they are.
    for name in ('rgb.png', 'rgba.png', 'palette.png', 'palette_trns.png', 'palette2_trns.png', 'rgb.jpg'):
        a = np.asarray(Image.open(out('images', name)).convert('RGB'))
        np.save(out('images', name.replace('.', '_') + '.npy'), chw(a))
    for name in ('gray.png', 'gray.jpg'):
        np.save(out('images', name.replace('.', '_') + '.npy'), chw(np.asarray(Image.open(out('images', name)))))
    g16 = np.asarray(Image.open(out('images', 'gray16.png'))).astype(np.int64)
    np.save(out('images', 'gray16_png.npy'), chw(((g16 * 255 + 32767) // 65535).astype(np.uint8)))
    # Resizes and crops as PyTorch / torchvision compute them on a uint8 tensor.
    import torchvision.transforms as T
    src = torch.from_numpy(chw(rgb))
    np.save(out('images', 'rgb_chw.npy'), chw(rgb))
    for h, w in ((5, 4), (13, 11), (7, 3)):
        r = torch.nn.functional.interpolate(src[None].float(), size=(h, w), mode='bilinear', align_corners=False)
        np.save(out('images', f'resize_{h}x{w}.npy'), r[0].round().clamp(0, 255).to(torch.uint8).numpy())
    for size in (4, 6):
        r = T.Compose([T.Resize(size), T.CenterCrop(size)])(src)
        np.save(out('images', f'resize_crop_{size}.npy'), r.numpy())
    np.save(out('images', 'crop_4x5.npy'), T.CenterCrop((4, 5))(src).numpy())
    np.save(out('images', 'rgb_to_gray.npy'), chw(np.asarray(Image.fromarray(rgb, 'RGB').convert('L'))))


def write_tokens():
    toks = (np.arange(300) * 37 % 50257).astype(np.uint16)
    toks.tofile(out('tokens', 'nanogpt_uint16.bin'))
    header = np.zeros(256, dtype=np.int32)  # llm.c dev/data/data_common.py write_datafile
    header[0], header[1], header[2] = 20240520, 1, len(toks)
    with open(out('tokens', 'llmc_v1.bin'), 'wb') as f:
        f.write(header.tobytes())
        f.write(toks.tobytes())
    toks32 = (np.arange(300, dtype=np.uint64) * 40961 % 128256).astype(np.uint32)
    header[1], header[2] = 2, len(toks32)
    with open(out('tokens', 'llmc_v2.bin'), 'wb') as f:
        f.write(header.tobytes())
        f.write(toks32.tobytes())


if __name__ == '__main__':
    write_npy()
    write_images()
    write_tokens()
