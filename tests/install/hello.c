/* hello.c: the smallest program a user of an installed wick writes. tests/install_test.sh builds
 * it against an install prefix twice (pkg-config, CMake find_package) and runs it: it opens the
 * CPU, adds two small f32 storages and checks the sum against literals. Exit 0 on success. */
#include <stdio.h>
#include <string.h>
#include <wick.h>

static int fail(const char *what, wk_status st)
{
    fprintf(stderr, "hello: %s: %s (%s)\n", what, wk_status_string(st), wk_last_error());
    return 1;
}

int main(void)
{
    if (wk_version() != WK_VERSION_NUMBER || strcmp(wk_version_string(), WK_VERSION_STRING) != 0) {
        fprintf(stderr, "hello: header %s but library %s\n", WK_VERSION_STRING, wk_version_string());
        return 1;
    }
    wk_device *dev = NULL;
    wk_storage *a = NULL, *b = NULL, *c = NULL;
    const float x[3] = {1.0f, 2.0f, 3.0f}, y[3] = {10.0f, 20.0f, 30.0f};
    const float want[3] = {11.0f, 22.0f, 33.0f};
    float got[3] = {0, 0, 0};
    const int64_t dims[1] = {3};
    wk_layout l;
    wk_status st;
    int rc = 1;
    if ((st = wk_device_open(&dev, "cpu")))
        return fail("wk_device_open(cpu)", st);
    if ((st = wk_storage_from_host(&a, dev, WK_DTYPE_F32, x, 3)) ||
        (st = wk_storage_from_host(&b, dev, WK_DTYPE_F32, y, 3)) ||
        (st = wk_layout_contiguous(&l, 1, dims)) ||
        (st = wk_binary(&c, WK_OP_ADD, a, &l, b, &l)) ||
        (st = wk_storage_to_host(got, 3, c))) {
        fail("add", st);
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 3; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "hello: element %d is %g, expected %g\n", i, got[i], want[i]);
            rc = 1;
        }
    if (rc == 0)
        printf("hello: wick %s on %s: [1,2,3] + [10,20,30] = [%g,%g,%g]\n", wk_version_string(),
               wk_device_name(dev), got[0], got[1], got[2]);
done:
    wk_storage_free(c);
    wk_storage_free(b);
    wk_storage_free(a);
    wk_device_close(dev);
    return rc;
}
