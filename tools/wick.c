/* wick.c: the `wick` command.
 *   wick version                              library version
 *   wick devices                              devices of every backend, or why it is unavailable
 *   wick check [--device D] [--op NAME] [-v]  the parity matrix of device D (default: auto)
 *   wick gguf FILE                            a GGUF file's header, metadata and tensors
 *   wick help
 * `wick check` exits 1 if any (op, dtype) pair fails, 2 on a usage error. Its output is what to
 * attach to a bug report (docs/parity.md). */
#include "parity.h"
#include "wick.h"
#include <ctype.h>
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
            "  gguf FILE                            list a GGUF file: version, alignment, metadata\n"
            "                                       (arrays as type[count] and their first values),\n"
            "                                       tensors (name, type, dims, file offset, bytes)\n"
            "  help                                 this text\n"
            "exit status of check: 0 all pass, 1 a failure, 2 usage error\n");
}

static int cmd_version(void)
{
    printf("wick %s (library %s)\n", WK_VERSION_STRING, wk_version_string());
    return 0;
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
                printf("  %-8s %s\n", spec, wk_device_name(dev));
            else
                printf("  %-8s cannot open: %s: %s\n", spec, wk_status_string(st), wk_last_error());
            wk_device_close(dev);
        }
    }
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

/* ---- wick gguf FILE */
/* A string value: quoted, at most 60 bytes, control bytes as \xNN (UTF-8 passes through). */
static void print_string(const char *s, uint64_t len)
{
    putchar('"');
    for (uint64_t i = 0; i < len && i < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (isprint(c) || c >= 0x80)
            putchar(c);
        else
            printf("\\x%02x", c);
    }
    printf(len > 60 ? "\"... (%llu bytes)" : "\"", (unsigned long long)len);
}

/* One value; arrays as type[count] [first values, ...] (nested arrays below the first level:
 * type[count] only). */
static void print_value(wk_gguf_value v, int level)
{
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64; float f32; double f64; int b;
    } x;
    const char *s;
    uint64_t len, n;
    wk_gguf_type et;
    switch (wk_gguf_value_type(v)) {
    case WK_GGUF_TYPE_U8: wk_gguf_get_u8(&x.u8, v); printf("%u", x.u8); break;
    case WK_GGUF_TYPE_I8: wk_gguf_get_i8(&x.i8, v); printf("%d", x.i8); break;
    case WK_GGUF_TYPE_U16: wk_gguf_get_u16(&x.u16, v); printf("%u", x.u16); break;
    case WK_GGUF_TYPE_I16: wk_gguf_get_i16(&x.i16, v); printf("%d", x.i16); break;
    case WK_GGUF_TYPE_U32: wk_gguf_get_u32(&x.u32, v); printf("%u", x.u32); break;
    case WK_GGUF_TYPE_I32: wk_gguf_get_i32(&x.i32, v); printf("%d", x.i32); break;
    case WK_GGUF_TYPE_U64: wk_gguf_get_u64(&x.u64, v); printf("%llu", (unsigned long long)x.u64); break;
    case WK_GGUF_TYPE_I64: wk_gguf_get_i64(&x.i64, v); printf("%lld", (long long)x.i64); break;
    case WK_GGUF_TYPE_F32: wk_gguf_get_f32(&x.f32, v); printf("%.9g", x.f32); break;
    case WK_GGUF_TYPE_F64: wk_gguf_get_f64(&x.f64, v); printf("%.17g", x.f64); break;
    case WK_GGUF_TYPE_BOOL: wk_gguf_get_bool(&x.b, v); printf("%s", x.b ? "true" : "false"); break;
    case WK_GGUF_TYPE_STRING: wk_gguf_get_string(&s, &len, v); print_string(s, len); break;
    case WK_GGUF_TYPE_ARRAY:
        wk_gguf_array_info(&et, &n, v);
        printf("%s[%llu]", wk_gguf_type_name(et), (unsigned long long)n);
        if (level > 0 || n == 0)
            break;
        printf(" [");
        for (uint64_t i = 0; i < n && i < 8; i++) {
            wk_gguf_value e;
            wk_gguf_array_elem(&e, v, i);
            printf(i ? ", " : "");
            print_value(e, level + 1);
        }
        printf(n > 8 ? ", ...]" : "]");
        break;
    }
}

static int cmd_gguf(int argc, char **argv)
{
    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    wk_gguf *g = NULL;
    wk_status st = wk_gguf_open(&g, argv[0]);
    if (st != WK_OK) {
        fprintf(stderr, "wick gguf: %s: %s\n", wk_status_string(st), wk_last_error());
        return 1;
    }
    printf("%s: GGUF version %u, alignment %u, %llu bytes, data section at byte %llu\n", argv[0],
           wk_gguf_version(g), wk_gguf_alignment(g), (unsigned long long)wk_gguf_file_size(g),
           (unsigned long long)wk_gguf_data_offset(g));
    printf("metadata: %lld pairs\n", (long long)wk_gguf_kv_count(g));
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        wk_gguf_value v;
        wk_gguf_kv_value(&v, g, i);
        printf("  %-40s %-7s ", wk_gguf_key(g, i), wk_gguf_type_name(wk_gguf_value_type(v)));
        print_value(v, 0);
        putchar('\n');
    }
    printf("tensors: %lld\n", (long long)wk_gguf_tensor_count(g));
    printf("  %-40s %-5s %-28s %12s %12s\n", "name", "type", "dims (outermost first)",
           "file offset", "bytes");
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        wk_gguf_tensor_info t;
        wk_gguf_tensor_info_get(&t, g, i);
        char dims[96];
        int k = snprintf(dims, sizeof dims, "[");
        for (int d = 0; d < t.n_dims; d++)
            k += snprintf(dims + k, sizeof dims - (size_t)k, d ? ", %lld" : "%lld", (long long)t.dims[d]);
        snprintf(dims + k, sizeof dims - (size_t)k, "]");
        printf("  %-40s %-5s %-28s %12llu %12llu\n", t.name, wk_qtype_name(t.qtype), dims,
               (unsigned long long)(wk_gguf_data_offset(g) + t.offset), (unsigned long long)t.nbytes);
    }
    wk_gguf_close(g);
    return 0;
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
    if (strcmp(cmd, "gguf") == 0)
        return cmd_gguf(argc - 2, argv + 2);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "wick: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
