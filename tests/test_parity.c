/* test_parity.c: the full parity matrix (tests/parity, docs/parity.md) on the CPU and on every GPU
 * device present; a backend with no device is skipped with a "skip:" line (testlib_devices).
 * Fails if any (op, dtype) pair fails on any device. Build and run: ctest -R test_parity. */
#include "parity.h"
#include "testlib.h"

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    int n = testlib_devices(specs);
    for (int i = 0; i < n; i++) {
        wk_device *dev = NULL;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[i]), WK_OK))
            continue;
        parity_report rep;
        if (TEST_EQ_STATUS(parity_run(&rep, dev, NULL), WK_OK)) {
            parity_print(stdout, &rep, 0);
            for (int r = 0; r < rep.nrows; r++)
                TEST_CHECK(rep.rows[r].status != PARITY_FAIL, "%s: %s %s: %s", specs[i],
                           rep.rows[r].name, wk_dtype_name(rep.rows[r].dtype), rep.rows[r].msg);
            TEST_CHECK(rep.nrows > 0 && rep.npass > 0, "%s: the matrix ran nothing", specs[i]);
            parity_report_free(&rep);
        }
        wk_device_close(dev);
    }
    return testlib_summary();
}
