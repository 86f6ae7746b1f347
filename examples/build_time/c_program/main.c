/* A C program that links a kernel symgrad generated: the founding question's derivative at 3. */
#include <stdio.h>

#include "seed.h"

int main(void) {
    const double x = 3.0;
    double d = 0.0;
    seed_grad(&x, &d);                      /* one point */
    const double xs[4] = {3.0, 0.5, -1.0, 3.0};
    double ds[4];
    seed_grad_batch(4, xs, ds);             /* four points, one after another */
    printf("%.17g %.17g\n", d, ds[3]);
    return d == ds[3] ? 0 : 1;
}
