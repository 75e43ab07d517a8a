/* gpu_graph.c: graph capture and replay on a GPU device (wk_graph_*, include/wick.h; rules in
 * docs/semantics.md, "Graphs"). The device's one stream is put in capture mode (CUDA:
 * cuStreamBeginCapture, relaxed; HIP: hipStreamBeginCapture), so every op issued on the device
 * is recorded instead of run; the end instantiates an executable graph that a replay launches
 * on the same stream in one call. Memory: while a capture is open the caching allocator pins
 * every block it hands out to the graph and parks every block freed, so the addresses the
 * graph recorded (outputs, scratch) are never handed out again while the graph exists; the
 * graph's free waits for its replays and returns those blocks. What cannot be captured (a
 * synchronize, a download or an upload) fails before touching the stream (gpu_backend.c). */
#include "gpu_driver.h"
#include "gpu_ops.h"
#include <stdio.h>

typedef struct gpu_graph {
    void *exec;
} gpu_graph;

wk_status wk_gpu_graph_begin(wk_device *dev)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    if (!g->drv->graph_ok || !g->drv->graph_ok())
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: the driver library has no graph entry points",
                      g->drv->name);
    if (g->capture)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_graph_begin: a capture is already open on "
                      "%s:%d (captures do not nest)", g->drv->name, g->ordinal);
    /* the error record and the completion counters before the capture: allocating and zeroing
     * them inside one (a captured op that checks ids or key counts, or merges its blocks)
     * would record the zeroing into the graph instead of running it */
    uint32_t *word, *ctr;
    wk_status st = wk_gpu_error_word(dev, &word);
    if (st == WK_OK)
        st = wk_gpu_counters(dev, &ctr);
    if (st != WK_OK)
        return st;
    gpu_graph *gr = wk_calloc(1, sizeof *gr);
    if (!gr)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_graph_begin: out of host memory");
    st = g->drv->capture_begin(g->ctx);
    if (st != WK_OK) {
        wk_free(gr);
        return st;
    }
    g->capture = gr;
    wk_gpu_alloc_capture(g, gr);
    return WK_OK;
}

wk_status wk_gpu_graph_end(wk_device *dev, void **graph)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    gpu_graph *gr = (gpu_graph *)g->capture;
    if (!gr)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_graph_end: no capture is open on %s:%d",
                      g->drv->name, g->ordinal);
    g->capture = NULL;
    wk_gpu_alloc_capture(g, NULL);
    wk_status st = g->drv->capture_end(g->ctx, &gr->exec);
    if (st != WK_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", wk_last_error());
        (void)g->drv->sync(g->ctx);
        wk_gpu_alloc_release(g, gr);
        wk_free(gr);
        return wk_err(st, "wk_graph_end: the capture failed (an op issued during it was rejected "
                      "by the driver): %s", why);
    }
    *graph = gr;
    return WK_OK;
}

wk_status wk_gpu_graph_launch(wk_device *dev, void *graph)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    if (g->capture)
        return wk_err(WK_ERR_NOT_SUPPORTED, "wk_graph_launch: %s:%d is capturing; replays are "
                      "not recorded into another graph", g->drv->name, g->ordinal);
    return g->drv->graph_launch(g->ctx, ((gpu_graph *)graph)->exec);
}

void wk_gpu_graph_free(wk_device *dev, void *graph)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    gpu_graph *gr = graph;
    (void)g->drv->sync(g->ctx); /* its replays have finished */
    g->drv->graph_destroy(g->ctx, gr->exec);
    wk_gpu_alloc_release(g, gr);
    wk_free(gr);
}
