/* sort_radix.cu: the radix sorts of arg_sort_last_dim (kernels/sort_radix.h; the order and keys:
 * kernels/sort.cu, kernels/sort_keys.h); module "sort_radix". */
#include "sort_keys.h"
#include "sort_radix.h"
