/* symgrad's portable maths: what C99's <math.h> lacks, written once for every target. The
 * in-process CPU kernels include this file; standalone C and CUDA files get a copy of the
 * functions they call. SYMGRAD_FN qualifies each function: static in C, static __device__
 * in CUDA. Only <math.h>. */
#ifndef SYMGRAD_MATH_H
#define SYMGRAD_MATH_H

#ifndef SYMGRAD_FN
#ifdef __CUDACC__
#define SYMGRAD_FN static __device__
#else
#define SYMGRAD_FN static
#endif
#endif
#ifndef SYMGRAD_FN_INLINE /* straight-line helpers: inlined wherever called, so that a SIMD lane
    loop calling them vectorises (GCC -O1 inlined one called twice in a file nowhere, and left
    that loop, its libmvec calls with it, scalar: the last bit differed from a loop calling it once) */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define SYMGRAD_FN_INLINE SYMGRAD_FN inline __attribute__((always_inline))
#else
#define SYMGRAD_FN_INLINE SYMGRAD_FN
#endif
#endif

/* polygamma(m, x): the m-th derivative of digamma, the derivatives of lgamma/tgamma.
 * Shift x up with the recurrence, then sum the asymptotic series. */
SYMGRAD_FN double symgrad_polygamma(int m, double x) {
    /* Bernoulli numbers B_2 .. B_20 */
    const double b2k[10] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66,
                            -691.0 / 2730, 7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330};
    if (isnan(x)) return x;
    if (x <= 0 && x == floor(x)) return NAN; /* poles */
    if (m == 0 && x < -1e3) {                /* reflection: psi(1-x) - pi/tan(pi x) */
        const double pi = 3.14159265358979323846;
        return symgrad_polygamma(0, 1 - x) - pi / tan(pi * (x - nearbyint(x)));
    }
    double fact = 1; /* m! */
    for (int k = 2; k <= m; ++k) fact *= k;
    const double sign = (m % 2 == 1) ? 1.0 : -1.0; /* (-1)^(m+1) */
    double acc = 0;
    const double lim = 12.0 + m;
    while (x < lim) { /* psi^(m)(x) = psi^(m)(x+1) + (-1)^(m+1) m! / x^(m+1) */
        acc += sign * fact / pow(x, m + 1);
        x += 1;
    }
    const double r = 1.0 / x, r2 = r * r;
    double series;
    if (m == 0) {
        series = log(x) - 0.5 * r;
        double p = r2;
        for (int k = 0; k < 10; ++k, p *= r2) series -= b2k[k] / (2 * (k + 1)) * p;
        return series + acc;
    }
    /* (m-1)!/x^m + m!/(2 x^(m+1)) + sum_k B_2k (2k+m-1)!/(2k)! / x^(2k+m) */
    const double xm = pow(x, m);
    series = fact / m / xm + fact / (2 * xm * x);
    double c = fact / m; /* (2k+m-1)!/(2k)!, updated in the loop */
    double p = 1.0 / xm;
    for (int k = 1; k <= 10; ++k) {
        c *= (double)(2 * k + m - 2) * (2 * k + m - 1) / ((2 * k - 1) * (2.0 * k));
        p *= r2;
        series += b2k[k - 1] * c * p;
    }
    return sign * series + acc;
}

/* Python's x % y (np.mod): the remainder with the sign of y (CPython's float_rem). */
SYMGRAD_FN double symgrad_mod(double x, double y) {
    double m = fmod(x, y);
    if (m != 0) {
        if ((y < 0) != (m < 0)) m += y;
    } else {
        m = copysign(0.0, y);
    }
    return m;
}

/* Python's x // y (np.floor_divide): floor of the exact quotient (CPython's float_floor_div). */
SYMGRAD_FN double symgrad_floordiv(double x, double y) {
    if (y == 0) return x / y;
    double m = fmod(x, y), d = (x - m) / y;
    if (m != 0 && (y < 0) != (m < 0)) d -= 1.0;
    if (d != 0) {
        double f = floor(d);
        if (d - f > 0.5) f += 1.0;
        return f;
    }
    return copysign(0.0, x / y);
}

/* The same in float (numpy's float32 arithmetic). */
SYMGRAD_FN float symgrad_modf(float x, float y) {
    float m = fmodf(x, y);
    if (m != 0) {
        if ((y < 0) != (m < 0)) m += y;
    } else {
        m = copysignf(0.0f, y);
    }
    return m;
}

SYMGRAD_FN float symgrad_floordivf(float x, float y) {
    if (y == 0) return x / y;
    float m = fmodf(x, y), d = (x - m) / y;
    if (m != 0 && (y < 0) != (m < 0)) d -= 1.0f;
    if (d != 0) {
        float f = floorf(d);
        if (d - f > 0.5f) f += 1.0f;
        return f;
    }
    return copysignf(0.0f, x / y);
}

/* 1/cosh(x)^2, the derivative of tanh, as 4e/(1+e)^2 with e = exp(-2|x|): a few ulp
 * everywhere, subnormal values included (cosh(x)^2 overflows from |x| = 355). */
SYMGRAD_FN_INLINE double symgrad_sech2(double x) {
    double e = exp(-2.0 * fabs(x));
    return 4.0 * e / ((1.0 + e) * (1.0 + e));
}

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_sech2f(float x) {
    float e = expf(-2.0f * fabsf(x));
    return 4.0f * e / ((1.0f + e) * (1.0f + e));
}


/* numpy's logaddexp (npy_logaddexp): log(exp(x) + exp(y)) as the larger plus log1p(exp(-|x - y|)),
 * x + log(2) at a tie (infinities of one sign give themselves), NaN for a NaN. One expression
 * (no branch), so that a SIMD lane loop calling it vectorises. */
SYMGRAD_FN_INLINE double symgrad_logaddexp(double x, double y) {
    const double d = x - y, r = (d > 0 ? x : y) + log1p(exp(-fabs(d)));
    return x == y ? x + 0.693147180559945309417232121458176568 : (d != d ? d : r);
}

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_logaddexpf(float x, float y) {
    const float d = x - y, r = (d > 0 ? x : y) + log1pf(expf(-fabsf(d)));
    return x == y ? x + 0.693147180559945309417232121458176568f : (d != d ? d : r);
}

/* numpy's logaddexp2 (npy_logaddexp2): log2(2^x + 2^y), x + 1 at a tie, NaN for a NaN. */
SYMGRAD_FN_INLINE double symgrad_logaddexp2(double x, double y) {
    const double d = x - y, r = (d > 0 ? x : y) + 1.442695040888963407359924681001892137 * log1p(exp2(-fabs(d)));
    return x == y ? x + 1 : (d != d ? d : r);
}

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_logaddexp2f(float x, float y) {
    const float d = x - y, r = (d > 0 ? x : y) + 1.442695040888963407359924681001892137f * log1pf(exp2f(-fabsf(d)));
    return x == y ? x + 1 : (d != d ? d : r);
}

/* numpy's maximum: b where b > a or b is NaN, else a (NaN where either is; the first at a tie). */
SYMGRAD_FN_INLINE double symgrad_maximum(double a, double b) { return (b > a || isnan(b)) ? b : a; }

/* numpy's minimum: b where b < a or b is NaN, else a. */
SYMGRAD_FN_INLINE double symgrad_minimum(double a, double b) { return (b < a || isnan(b)) ? b : a; }

/* numpy's fmax: b where b > a or a is NaN, else a (a NaN operand ignored; the first at a tie).
 * Not C's fmax, whose choice at a tie of +0.0 and -0.0 is unspecified. */
SYMGRAD_FN_INLINE double symgrad_fmax(double a, double b) { return (b > a || isnan(a)) ? b : a; }

/* numpy's fmin: b where b < a or a is NaN, else a. */
SYMGRAD_FN_INLINE double symgrad_fmin(double a, double b) { return (b < a || isnan(a)) ? b : a; }

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_maximumf(float a, float b) { return (b > a || isnan(b)) ? b : a; }

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_minimumf(float a, float b) { return (b < a || isnan(b)) ? b : a; }

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_fmaxf(float a, float b) { return (b > a || isnan(a)) ? b : a; }

/* The same in float. */
SYMGRAD_FN_INLINE float symgrad_fminf(float a, float b) { return (b < a || isnan(a)) ? b : a; }

/* math.fsum: the exactly rounded sum of p[0..n) (Shewchuk's partials, as CPython's
 * fsum), in place; p[n..2n) holds a copy of the terms. An infinity gives itself, inf - inf
 * and NaN give NaN (where Python raises); where a partial sum overflows (Python raises
 * OverflowError), the terms are summed again halved until none does, and scaled back. */
SYMGRAD_FN double symgrad_fsum(int n, double *p) {
    double scale = 1;
    for (;;) {
        double special = 0, hi, lo;
        int m = 0, k, i, j, overflow = 0;
        for (k = 0; k < n && !overflow; ++k) {
            double x = p[n + k] / scale;
            if (isinf(x) || isnan(x)) {
                special += x;
                continue;
            }
            for (i = 0, j = 0; j < m; ++j) {
                double y = p[j];
                if (fabs(x) < fabs(y)) {
                    double t = x;
                    x = y;
                    y = t;
                }
                hi = x + y;
                lo = y - (hi - x);
                if (lo != 0) p[i++] = lo;
                x = hi;
            }
            if (isinf(x)) overflow = 1;
            else if (x != 0) p[i++] = x;
            m = i;
        }
        if (overflow && scale < 1e300) {
            scale *= 2;
            continue;
        }
        if (special != 0 || isnan(special)) return special;
        if (m == 0) return 0;
        hi = p[--m];
        lo = 0;
        while (m > 0) {
            double x = hi, y = p[--m];
            hi = x + y;
            lo = y - (hi - x);
            if (lo != 0) break;
        }
        if (m > 0 && ((lo < 0 && p[m - 1] < 0) || (lo > 0 && p[m - 1] > 0))) {
            double y = lo * 2, x = hi + y;
            if (y == x - hi) hi = x;
        }
        return hi * scale;
    }
}

/* The same in float: the exactly rounded sum of p[0..n) (Shewchuk's partials, as CPython's
 * fsum), in place; p[n..2n) holds a copy of the terms. An infinity gives itself, inf - inf
 * and NaN give NaN (where Python raises); where a partial sum overflows (Python raises
 * OverflowError), the terms are summed again halved until none does, and scaled back. */
SYMGRAD_FN float symgrad_fsumf(int n, float *p) {
    float scale = 1;
    for (;;) {
        float special = 0, hi, lo;
        int m = 0, k, i, j, overflow = 0;
        for (k = 0; k < n && !overflow; ++k) {
            float x = p[n + k] / scale;
            if (isinf(x) || isnan(x)) {
                special += x;
                continue;
            }
            for (i = 0, j = 0; j < m; ++j) {
                float y = p[j];
                if (fabsf(x) < fabsf(y)) {
                    float t = x;
                    x = y;
                    y = t;
                }
                hi = x + y;
                lo = y - (hi - x);
                if (lo != 0) p[i++] = lo;
                x = hi;
            }
            if (isinf(x)) overflow = 1;
            else if (x != 0) p[i++] = x;
            m = i;
        }
        if (overflow && scale < 1e30f) {
            scale *= 2;
            continue;
        }
        if (special != 0 || isnan(special)) return special;
        if (m == 0) return 0;
        hi = p[--m];
        lo = 0;
        while (m > 0) {
            float x = hi, y = p[--m];
            hi = x + y;
            lo = y - (hi - x);
            if (lo != 0) break;
        }
        if (m > 0 && ((lo < 0 && p[m - 1] < 0) || (lo > 0 && p[m - 1] > 0))) {
            float y = lo * 2, x = hi + y;
            if (y == x - hi) hi = x;
        }
        return hi * scale;
    }
}

#endif
