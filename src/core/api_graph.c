/* api_graph.c: front end of graph capture and replay (wk_graph_*, include/wick.h): argument
 * checks, the wk_graph record, and the backend entries (src/core/backend.h). A backend without
 * them (the CPU) reports WK_ERR_NOT_SUPPORTED. */
#include "api.h"

struct wk_graph {
    wk_device *dev;
    void *impl;
};

static wk_status graph_backend(const wk_device *dev, const char *name)
{
    if (!dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL device", name);
    if (!dev->be->graph_begin)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %s devices do not capture graphs (their ops "
                      "run at the call); capture on a GPU device", name, dev->be->name);
    return WK_OK;
}

wk_status wk_graph_begin(wk_device *dev)
{
    wk_status st = graph_backend(dev, "wk_graph_begin");
    return st != WK_OK ? st : dev->be->graph_begin(dev);
}

wk_status wk_graph_end(wk_device *dev, wk_graph **out)
{
    wk_status st = graph_backend(dev, "wk_graph_end");
    if (st != WK_OK)
        return st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_graph_end: NULL output");
    void *impl = NULL;
    if ((st = dev->be->graph_end(dev, &impl)) != WK_OK)
        return st;
    wk_graph *g = wk_malloc(sizeof *g);
    if (!g) {
        dev->be->graph_free(dev, impl);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_graph_end: out of host memory");
    }
    g->dev = dev;
    g->impl = impl;
    *out = g;
    return WK_OK;
}

wk_status wk_graph_launch(wk_graph *g)
{
    if (!g)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_graph_launch: NULL graph");
    return g->dev->be->graph_launch(g->dev, g->impl);
}

void wk_graph_free(wk_graph *g)
{
    if (!g)
        return;
    g->dev->be->graph_free(g->dev, g->impl);
    wk_free(g);
}
