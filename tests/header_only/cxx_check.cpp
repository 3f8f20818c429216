// difkern.h must compile as C++ (tests/header_only/header_only.py), inline helpers included.
#include <difkern.h>

int main() {
    dk_tensor t = dk_tensor_nhwc(nullptr, 0, DK_BF16, 1, 8, 4, 4);
    dk_conv2d_desc d;
    dk_conv2d_desc_init(&d);
    return dk_tensor_numel(&t) == 128 && dk_dtype_size(t.dtype) == 2 && d.groups == 1 ? 0 : 1;
}
