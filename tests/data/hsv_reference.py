#!/usr/bin/python3
"""Expected outputs for tests/data/test_hsv.cpp, computed by the reference's RandomHSV formula.

Run by hand (needs numpy and OpenCV's Python binding, e.g. Debian's python3-numpy and
python3-opencv, which share the C++ build's OpenCV 4.6) and paste the printed arrays into the
test. The body of hsv() is the reference's RandomHSV.__call__ with the random draw replaced by
fixed gains r, so the test checks detrain against the formula as the reference writes it
(numpy's floored % and astype truncation), not against a re-reading of it.
"""
import cv2
import numpy as np

# 16 BGR pixels: greys (saturation 0 must stay 0), primaries, hues either side of the 0/180
# wrap, low and high saturation, dark and bright values.
PIXELS = [
    (0, 0, 0), (128, 128, 128), (255, 255, 255), (255, 0, 0),
    (0, 255, 0), (0, 0, 255), (200, 60, 30), (120, 110, 100),
    (250, 10, 0), (245, 0, 250), (10, 0, 250), (3, 250, 240),
    (17, 34, 51), (240, 230, 220), (90, 200, 140), (64, 0, 128),
]

GAINS = [  # r = (r_h, r_s, r_v), each in [-gain, gain] of the reference's defaults 0.015/0.7/0.4
    (0.0123, -0.45, 0.31),
    (-0.015, 0.7, -0.4),
    (0.0, 0.0, 0.25),
    (0.004, 0.66, 0.0),
]


def hsv(img, r):
    dtype = img.dtype  # uint8
    x = np.arange(0, 256, dtype=np.float64)
    lut_hue = ((x + r[0] * 180) % 180).astype(dtype)
    lut_sat = np.clip(x * (r[1] + 1), 0, 255).astype(dtype)
    lut_val = np.clip(x * (r[2] + 1), 0, 255).astype(dtype)
    lut_sat[0] = 0  # prevent pure white changing color
    hue, sat, val = cv2.split(cv2.cvtColor(img, cv2.COLOR_BGR2HSV))
    im_hsv = cv2.merge((cv2.LUT(hue, lut_hue), cv2.LUT(sat, lut_sat), cv2.LUT(val, lut_val)))
    out = img.copy()
    cv2.cvtColor(im_hsv, cv2.COLOR_HSV2BGR, dst=out)
    return out


img = np.array(PIXELS, dtype=np.uint8).reshape(4, 4, 3)
print(f"// numpy {np.__version__}, OpenCV {cv2.__version__}")
for r in GAINS:
    out = hsv(img, r).reshape(-1)
    print("{{%s, %s, %s}, {%s}}," % (*r, ", ".join(str(int(v)) for v in out)))
