/* test_status.c: status names, the thread-local last-error message, version and name tables.
 * Run: ctest -R test_status */
#include "testlib.h"
#include <pthread.h>
#include <string.h>

static void test_status_strings(void)
{
    static const struct { wk_status s; const char *name; } all[] = {
        {WK_OK, "WK_OK"},
        {WK_ERR_INVALID_ARGUMENT, "WK_ERR_INVALID_ARGUMENT"},
        {WK_ERR_SHAPE, "WK_ERR_SHAPE"},
        {WK_ERR_DTYPE, "WK_ERR_DTYPE"},
        {WK_ERR_LAYOUT, "WK_ERR_LAYOUT"},
        {WK_ERR_OVERFLOW, "WK_ERR_OVERFLOW"},
        {WK_ERR_INDEX_OUT_OF_RANGE, "WK_ERR_INDEX_OUT_OF_RANGE"},
        {WK_ERR_DEVICE_MISMATCH, "WK_ERR_DEVICE_MISMATCH"},
        {WK_ERR_OUT_OF_MEMORY, "WK_ERR_OUT_OF_MEMORY"},
        {WK_ERR_DEVICE, "WK_ERR_DEVICE"},
        {WK_ERR_NO_DEVICE, "WK_ERR_NO_DEVICE"},
        {WK_ERR_TIMEOUT, "WK_ERR_TIMEOUT"},
        {WK_ERR_NOT_SUPPORTED, "WK_ERR_NOT_SUPPORTED"},
        {WK_ERR_IO, "WK_ERR_IO"},
        {WK_ERR_FORMAT, "WK_ERR_FORMAT"},
        {WK_ERR_INTERNAL, "WK_ERR_INTERNAL"},
    };
    const size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        const char *s = wk_status_string(all[i].s);
        TEST_CHECK(s != NULL, "wk_status_string(%d) is NULL", (int)all[i].s);
        if (!s)
            continue;
        /* The name starts the string ("WK_ERR_SHAPE: shape mismatch", wick.h), followed by the
         * end or a non-identifier character so WK_ERR_DEVICE is not mistaken for WK_ERR_DEVICE_MISMATCH. */
        const size_t len = strlen(all[i].name);
        TEST_CHECK(strncmp(s, all[i].name, len) == 0 && (s[len] == '\0' || s[len] == ':' || s[len] == ' '),
                   "wk_status_string(%d) = \"%s\", expected it to start with %s", (int)all[i].s, s,
                   all[i].name);
        for (size_t j = 0; j < i; j++)
            TEST_CHECK(strcmp(s, wk_status_string(all[j].s)) != 0, "statuses %d and %d share a name",
                       (int)all[i].s, (int)all[j].s);
    }
    /* Explicit, grouped values (wick.h: part of the ABI). */
    TEST_EQ_INT(WK_OK, 0);
    TEST_EQ_INT(WK_ERR_INVALID_ARGUMENT, 100);
    TEST_EQ_INT(WK_ERR_OUT_OF_MEMORY, 200);
    TEST_EQ_INT(WK_ERR_NO_DEVICE, 301);
    TEST_EQ_INT(WK_ERR_NOT_SUPPORTED, 400);
    TEST_EQ_INT(WK_ERR_INTERNAL, 900);
    /* An unknown value still gets a string, never NULL. */
    TEST_CHECK(wk_status_string((wk_status)12345) != NULL, "unknown status -> NULL");
    TEST_CHECK(wk_status_string((wk_status)-1) != NULL, "status -1 -> NULL");
}

static void *thread_last_error(void *arg)
{
    const char **out = arg;
    *out = wk_last_error();
    /* Copy the flag, not the pointer: the pointer may die with the thread. */
    return (void *)(intptr_t)(*out != NULL && (*out)[0] == '\0');
}

static void test_last_error(void)
{
    TEST_CHECK(wk_last_error() != NULL, "wk_last_error() is NULL");
    TEST_CHECK(wk_last_error()[0] == '\0', "fresh thread has a message: \"%s\"", wk_last_error());
    wk_device *dev = NULL;
    TEST_EQ_STATUS(wk_device_open(&dev, "no-such-device"), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(dev == NULL, "failed open left a handle");
    const char *msg = wk_last_error();
    TEST_CHECK(msg != NULL && msg[0] != '\0', "no message after a failed call");
    /* The message is thread-local: another thread sees its own (empty) one. */
    pthread_t t;
    const char *other = NULL;
    void *empty = NULL;
    TEST_CHECK(pthread_create(&t, NULL, thread_last_error, (void *)&other) == 0, "pthread_create");
    pthread_join(t, &empty);
    TEST_CHECK((intptr_t)empty == 1, "another thread sees this thread's message");
    TEST_CHECK(wk_last_error()[0] != '\0', "message lost after another thread ran");
}

static void test_names(void)
{
    TEST_EQ_INT(wk_version(), WK_VERSION_NUMBER);
    TEST_CHECK(strcmp(wk_version_string(), WK_VERSION_STRING) == 0, "version string %s",
               wk_version_string());
    TEST_CHECK(strcmp(wk_op_name(WK_OP_EXP), "exp") == 0, "op name exp: %s", wk_op_name(WK_OP_EXP));
    TEST_CHECK(strcmp(wk_op_name(WK_OP_GELU_ERF), "gelu_erf") == 0, "op name gelu_erf");
    TEST_CHECK(strcmp(wk_op_name(WK_OP_WHERE_COND), "where_cond") == 0, "op name where_cond");
    TEST_CHECK(strcmp(wk_op_name(WK_OP_ARGMAX), "argmax") == 0, "op name argmax");
    TEST_CHECK(strcmp(wk_op_name((wk_op)999), "?") == 0, "op 999 -> \"?\"");
    TEST_CHECK(strcmp(wk_op_name((wk_op)25), "?") == 0, "op 25 (a gap) -> \"?\"");
    /* Every defined op id has a distinct name. */
    for (int a = 0; a < WK_OP_ID_LIMIT; a++) {
        const char *na = wk_op_name((wk_op)a);
        TEST_CHECK(na != NULL, "wk_op_name(%d) NULL", a);
        if (!na || strcmp(na, "?") == 0)
            continue;
        for (int b = 0; b < a; b++)
            TEST_CHECK(strcmp(na, wk_op_name((wk_op)b)) != 0, "ops %d and %d share name %s", a, b, na);
    }
    TEST_CHECK(strcmp(wk_backend_name(WK_BACKEND_CPU), "cpu") == 0, "backend name cpu");
    TEST_CHECK(strcmp(wk_backend_name(WK_BACKEND_CUDA), "cuda") == 0, "backend name cuda");
    TEST_CHECK(strcmp(wk_backend_name(WK_BACKEND_ROCM), "rocm") == 0, "backend name rocm");
    TEST_CHECK(strcmp(wk_backend_name(WK_BACKEND_SIMT), "simt") == 0, "backend name simt");
}

static void test_devices(void)
{
    int n = -1;
    const char *reason = NULL;
    TEST_EQ_STATUS(wk_backend_device_count(&n, &reason, WK_BACKEND_CPU), WK_OK);
    TEST_EQ_INT(n, 1);
    TEST_CHECK(reason != NULL && reason[0] == '\0', "cpu reason should be empty: %s", reason ? reason : "(null)");
    for (int k = WK_BACKEND_CUDA; k < WK_BACKEND_COUNT; k++) {
        n = -1;
        reason = NULL;
        TEST_EQ_STATUS(wk_backend_device_count(&n, &reason, (wk_backend_kind)k), WK_OK);
        TEST_CHECK(n >= 0, "%s count %d", wk_backend_name((wk_backend_kind)k), n);
        TEST_CHECK(reason != NULL && ((n == 0) == (reason[0] != '\0')),
                   "%s: count %d, reason \"%s\"", wk_backend_name((wk_backend_kind)k), n,
                   reason ? reason : "(null)");
        TEST_EQ_STATUS(wk_backend_device_count(&n, NULL, (wk_backend_kind)k), WK_OK);
    }
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    for (int i = 0; i < nd; i++) {
        wk_device *dev = NULL;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[i]), WK_OK))
            continue;
        TEST_CHECK(wk_device_name(dev) != NULL && wk_device_name(dev)[0] != '\0', "device name");
        printf("device %s: %s\n", specs[i], wk_device_name(dev));
        TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK);
        TEST_EQ_INT(wk_device_same(dev, dev), 1);
        TEST_EQ_INT(wk_device_supports(dev, WK_OP_ADD, WK_DTYPE_F32), 1);
        TEST_EQ_INT(wk_device_supports(dev, WK_OP_EXP, WK_DTYPE_I32), 0); /* not defined */
        TEST_EQ_INT(wk_device_supports(dev, WK_OP_EXP, (wk_dtype)99), 0);
        wk_device_close(dev);
    }
    wk_device *cpu = NULL, *cpu2 = NULL, *cpu3 = NULL;
    TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK);
    TEST_EQ_INT(wk_device_backend(cpu), WK_BACKEND_CPU);
    TEST_EQ_INT(wk_device_ordinal(cpu), 0);
    TEST_EQ_STATUS(wk_device_open(&cpu2, "cpu"), WK_OK);
    TEST_EQ_INT(wk_device_same(cpu, cpu2), 1); /* one physical CPU */
    /* "auto": the first CUDA device, else ROCm, else the CPU. */
    TEST_EQ_STATUS(wk_device_open(&cpu3, "auto"), WK_OK);
    if (cpu3 && nd == 1)
        TEST_EQ_INT(wk_device_backend(cpu3), WK_BACKEND_CPU);
    else if (cpu3)
        TEST_CHECK(wk_device_backend(cpu3) != WK_BACKEND_CPU, "auto picked the cpu with a GPU present");
    wk_device_close(cpu3);
    wk_device_close(cpu2);
    wk_device_close(cpu);
    wk_device_close(NULL); /* a no-op */
    wk_storage_free(NULL);
}

int main(void)
{
    test_last_error(); /* first: checks the fresh thread has no message */
    test_status_strings();
    test_names();
    test_devices();
    return testlib_summary();
}
