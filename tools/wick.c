/* wick.c: the `wick` command.
 *   wick version                              library version
 *   wick devices                              devices of every backend, or why it is unavailable;
 *                                             where each device's kernels come from; the kernel
 *                                             cache
 *   wick check [--device D] [--op NAME] [-v]  the parity matrix of device D (default: auto)
 *   wick inspect FILE                         a GGUF or safetensors file's metadata and tensors
 *   wick gguf FILE                            the same for a GGUF file (the older name)
 *   wick help
 * `wick check` exits 1 if any (op, dtype) pair fails, 2 on a usage error. Its output is what to
 * attach to a bug report (docs/parity.md). */
#include "inspect.h"
#include "parity.h"
#include "wick.h"
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wick <command> [options]\n"
            "  version                              print the library version\n"
            "  devices                              list the devices of every backend (cpu, cuda, rocm)\n"
            "  check [--device D] [--op NAME] [-v]  run the parity matrix against the float64 reference\n"
            "      --device D   cpu, cuda:N, rocm:N or auto (default: auto = first GPU, else cpu)\n"
            "      --op NAME    only these rows (comma-separated row or op names, e.g. add,to_dtype)\n"
            "      -v           per (op, dtype) case counts and worst NMSE against the bound\n"
            "  inspect FILE                         list a GGUF or safetensors file (told apart by its\n"
            "                                       first bytes): header facts, metadata (GGUF arrays\n"
            "                                       as type[count] and their first values), tensors\n"
            "                                       (name, GGML type or dtype, dims, file offset, bytes)\n"
            "  gguf FILE                            the same, for a GGUF file only\n"
            "  help                                 this text\n"
            "exit status of check: 0 all pass, 1 a failure, 2 usage error; of inspect and gguf: 1 when the\n"
            "file cannot be read\n");
}

static int cmd_version(void)
{
    printf("wick %s (library %s)\n", WK_VERSION_STRING, wk_version_string());
    return 0;
}

static const char *code_source_text(wk_code_source c)
{
    switch (c) {
    case WK_CODE_BUILTIN:
        return "built into the library";
    case WK_CODE_AHEAD_OF_TIME:
        return "ahead of time (code objects embedded for this architecture)";
    case WK_CODE_DRIVER_JIT:
        return "embedded PTX, compiled by the CUDA driver at load (its cache: CUDA_CACHE_PATH)";
    case WK_CODE_RUN_TIME:
        return "compiled at run time from the embedded source (NVRTC/hipRTC), kept in the kernel "
               "cache";
    }
    return "?";
}

static int cmd_devices(void)
{
    for (int k = 0; k < WK_BACKEND_COUNT; k++) {
        wk_backend_kind kind = (wk_backend_kind)k;
        int n = 0;
        const char *reason = NULL;
        wk_status st = wk_backend_device_count(&n, &reason, kind);
        if (st != WK_OK) {
            printf("%s: error: %s: %s\n", wk_backend_name(kind), wk_status_string(st), wk_last_error());
            continue;
        }
        if (n == 0) {
            printf("%s: unavailable (%s)\n", wk_backend_name(kind),
                   reason && reason[0] ? reason : "no device");
            continue;
        }
        printf("%s: %d device%s\n", wk_backend_name(kind), n, n == 1 ? "" : "s");
        for (int i = 0; i < n; i++) {
            char spec[32];
            if (kind == WK_BACKEND_CPU)
                snprintf(spec, sizeof spec, "cpu");
            else
                snprintf(spec, sizeof spec, "%s:%d", wk_backend_name(kind), i);
            wk_device *dev = NULL;
            st = wk_device_open(&dev, spec);
            if (st == WK_OK)
                printf("  %-8s %s\n  %-8s kernels: %s\n", spec, wk_device_name(dev), "",
                       code_source_text(wk_device_code_source(dev)));
            else
                printf("  %-8s cannot open: %s: %s\n", spec, wk_status_string(st), wk_last_error());
            wk_device_close(dev);
        }
    }
    const char *dir = NULL, *note = NULL;
    wk_kernel_cache_info(&dir, &note);
    printf("kernel cache (run-time compiled modules): %s%s%s\n", dir[0] ? dir : "off",
           note[0] ? ": " : "", note);
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    const char *spec = "auto", *filter = NULL;
    int verbose = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            spec = argv[++i];
        } else if (strncmp(argv[i], "--device=", 9) == 0) {
            spec = argv[i] + 9;
        } else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) {
            filter = argv[++i];
        } else if (strncmp(argv[i], "--op=", 5) == 0) {
            filter = argv[i] + 5;
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            verbose = 1;
        } else {
            fprintf(stderr, "wick check: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    wk_device *dev = NULL;
    wk_status st = wk_device_open(&dev, spec);
    if (st != WK_OK) {
        fprintf(stderr, "wick check: cannot open device '%s': %s: %s\n", spec, wk_status_string(st),
                wk_last_error());
        return st == WK_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
    parity_report rep;
    st = parity_run(&rep, dev, filter);
    if (st == WK_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "wick check: --op '%s' matches no row; rows:", filter ? filter : "");
        for (int i = 0; i < parity_row_count(); i++)
            fprintf(stderr, " %s", parity_row_name(i));
        fprintf(stderr, "\n");
        wk_device_close(dev);
        return 2;
    }
    if (st != WK_OK) {
        fprintf(stderr, "wick check: %s\n", wk_status_string(st));
        wk_device_close(dev);
        return 1;
    }
    printf("wick %s check\n", wk_version_string());
    parity_print(stdout, &rep, verbose);
    int failed = rep.nfail > 0;
    parity_report_free(&rep);
    wk_device_close(dev);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
        return cmd_version();
    if (strcmp(cmd, "devices") == 0)
        return cmd_devices();
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "gguf") == 0 || strcmp(cmd, "inspect") == 0) {
        if (argc != 3) {
            usage(stderr);
            return 2;
        }
        return strcmp(cmd, "gguf") == 0 ? inspect_gguf(argv[2]) : inspect_file(argv[2]);
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "wick: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
