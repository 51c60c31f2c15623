"""The `openneuron check` HTML report opened in a real headless browser (Debian's Chromium, from
scripts/install_browser.sh): the page loads with no network and its SVG plots are drawn."""

import shutil
import struct
import subprocess
import zlib

import pytest
import torch
from torch import nn

import openneuron

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: about 300 MB, so make does not install it; "
    "scripts/install_browser.sh adds it",
)


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG, as Chromium writes them."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6)
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x : x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def test_report_plots_render_in_headless_chromium(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    openneuron.check(model, torch.randn(4, 8), steps=4, out_dir=str(tmp_path))
    html = tmp_path / "report.html"
    assert "http" not in html.read_text().replace("http://www.w3.org/2000/svg", "")  # no network
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=900,1400",
            f"--screenshot={shot}",
            html.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    width, height, rows = read_png(shot)
    assert (width, height) == (900, 1400)
    pixels = [p for row in rows[::2] for p in row[::2]]
    # The loss curves and error bars are drawn in the plot colours (#1f77b4 blue, #d62728 red).
    blue = sum(1 for r, g, b in pixels if abs(r - 0x1F) < 40 and abs(g - 0x77) < 40 and b > 150)
    red = sum(1 for r, g, b in pixels if r > 180 and g < 90 and b < 90)
    assert blue > 200, "no blue plot pixels: the SVG charts did not render"
    assert red > 20, "no red loss curve pixels"
