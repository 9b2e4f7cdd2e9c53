// SPDX-License-Identifier: GPL-2.0-only
/*
 * zipf.c - xoshiro256**, the rejection-inversion Zipf sampler, YCSB's
 * scrambled Zipfian generator, the key patterns built on them (and on a
 * truncated normal) and the keyed permutation.
 */
#include "zipf.h"

#include <math.h>

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		r->s[i] = z ^ (z >> 31);
	}
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Lemire's multiply-shift; the bias is below 2^-64 * n, negligible. */
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

int64_t arrival_gap(struct rng *r, int64_t mean_ns, int poisson)
{
	if (!poisson)
		return mean_ns;
	return (int64_t)llround(-(double)mean_ns * log1p(-rng_double(r)));
}

/* log1p(x)/x, continuous at 0 */
static double helper1(double x)
{
	if (fabs(x) > 1e-8)
		return log1p(x) / x;
	return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

/* expm1(x)/x, continuous at 0 */
static double helper2(double x)
{
	if (fabs(x) > 1e-8)
		return expm1(x) / x;
	return 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

/* H(x) = integral of h from 1 to x, shifted so that it is defined for s = 1 */
static double zh_integral(const struct zipf *z, double x)
{
	double lx = log(x);

	return helper2((1 - z->s) * lx) * lx;
}

static double zh(const struct zipf *z, double x)
{
	return exp(-z->s * log(x));
}

static double zh_integral_inverse(const struct zipf *z, double x)
{
	double t = x * (1 - z->s);

	if (t < -1)
		t = -1;	/* rounding guard */
	return exp(helper1(t) * x);
}

void zipf_init(struct zipf *z, uint64_t n, double s)
{
	z->n = n;
	z->s = s;
	z->h_x1 = zh_integral(z, 1.5) - 1;
	z->h_n = zh_integral(z, (double)n + 0.5);
	z->cut = 2 - zh_integral_inverse(z, zh_integral(z, 2.5) - zh(z, 2));
}

uint64_t zipf_sample(const struct zipf *z, struct rng *r)
{
	for (;;) {
		double u = z->h_n + rng_double(r) * (z->h_x1 - z->h_n);
		double x = zh_integral_inverse(z, u);
		double kd = floor(x + 0.5);
		uint64_t k;

		if (kd < 1)
			kd = 1;
		else if (kd > (double)z->n)
			kd = (double)z->n;
		k = (uint64_t)kd;
		if (kd - x <= z->cut || u >= zh_integral(z, kd + 0.5) - zh(z, kd))
			return k;
	}
}

/*
 * sum of k^-s for k = 1..n: the first terms summed, the rest by
 * Euler-Maclaurin (the integral, the end corrections and two derivative
 * terms), which is exact to about 1e-14 from m = 100 on.
 */
double zeta_sum(uint64_t n, double s)
{
	const uint64_t m = 100;
	double sum = 0, a, b, la, lb, d1a, d1b, d3a, d3b;

	for (uint64_t k = 1; k <= n && k < m; k++)
		sum += pow((double)k, -s);
	if (n < m)
		return sum;
	a = (double)m;
	b = (double)n;
	la = log(a);
	lb = log(b);
	/* integral of x^-s from a to b, continuous at s = 1 */
	sum += exp((1 - s) * la) * helper2((1 - s) * (lb - la)) * (lb - la);
	sum += (pow(a, -s) + pow(b, -s)) / 2;
	d1a = -s * pow(a, -s - 1);
	d1b = -s * pow(b, -s - 1);
	d3a = -s * (s + 1) * (s + 2) * pow(a, -s - 3);
	d3b = -s * (s + 1) * (s + 2) * pow(b, -s - 3);
	sum += (d1b - d1a) / 12 - (d3b - d3a) / 720;
	return sum;
}

void ycsb_zipf_init(struct ycsb_zipf *z, uint64_t n, double s)
{
	double zeta2;

	z->n = n;
	z->items = (double)(YCSB_ITEM_COUNT + 1);
	z->theta = s;
	z->zetan = s == 0.99 ? YCSB_ZETAN : zeta_sum(YCSB_ITEM_COUNT + 1, s);
	zeta2 = 1 + pow(0.5, s);
	z->half_pow = pow(0.5, s);
	z->alpha = 1.0 / (1.0 - s);
	z->eta = (1 - pow(2.0 / z->items, 1 - s)) / (1 - zeta2 / z->zetan);
	/* s = 1: (1 + eta (u - 1))^alpha tends to exp(ln(items/2) (u - 1) / d) */
	z->log_half_items = log(z->items / 2) / (1 - zeta2 / z->zetan);
}

uint64_t ycsb_zipf_value(const struct ycsb_zipf *z, struct rng *r)
{
	double u = rng_double(r), uz = u * z->zetan, v;

	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + z->half_pow)
		return 1;
	if (fabs(1 - z->theta) < 1e-9)
		v = z->items * exp(z->log_half_items * (u - 1));
	else
		v = z->items * pow(z->eta * u - z->eta + 1, z->alpha);
	/* Java's (long) truncates; NaN or overflow (huge s) stay in range */
	if (!(v >= 0))
		v = 0;
	if (v > (double)YCSB_ITEM_COUNT)
		v = (double)YCSB_ITEM_COUNT;
	return (uint64_t)v;
}

uint64_t ycsb_fnvhash64(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		v >>= 8;
		h *= 1099511628211ULL;
	}
	/* Math.abs of a long; Long.MIN_VALUE (2^63 here) stays as it is */
	return (int64_t)h < 0 ? -h : h;
}

uint64_t ycsb_zipf_sample(const struct ycsb_zipf *z, struct rng *r)
{
	return ycsb_fnvhash64(ycsb_zipf_value(z, r)) % z->n;
}

uint64_t gaussian_key(struct rng *r, uint64_t n, double mean, double sd)
{
	for (;;) {
		double u, v, q, x;

		/* Marsaglia's polar method: one standard normal of the pair */
		do {
			u = 2 * rng_double(r) - 1;
			v = 2 * rng_double(r) - 1;
			q = u * u + v * v;
		} while (q >= 1 || q == 0);
		x = floor(mean + sd * u * sqrt(-2 * log(q) / q) + 0.5);
		if (x >= 0 && x < (double)n)
			return (uint64_t)x;
	}
}

void keydist_init(struct keydist *d, int kind, uint64_t n, double param,
		  uint64_t start)
{
	d->kind = kind;
	d->n = n;
	d->sd = param;
	d->next = start % n;
	if (kind == KD_ZIPF)
		zipf_init(&d->zipf, n, param);
	else if (kind == KD_SCRAMBLED)
		ycsb_zipf_init(&d->ycsb, n, param);
}

uint64_t keydist_sample(struct keydist *d, struct rng *r)
{
	uint64_t k;

	switch (d->kind) {
	case KD_ZIPF:
		return zipf_sample(&d->zipf, r) - 1;
	case KD_SCRAMBLED:
		return ycsb_zipf_sample(&d->ycsb, r);
	case KD_SEQUENTIAL:
		k = d->next;
		d->next = k + 1 == d->n ? 0 : k + 1;
		return k;
	case KD_GAUSSIAN:
		return gaussian_key(r, d->n, (double)(d->n - 1) / 2, d->sd);
	default:
		return rng_below(r, d->n);
	}
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void perm_init(struct perm *p, uint64_t n, uint64_t seed)
{
	int bits = 2;

	while (bits < 64 && ((uint64_t)1 << bits) < n)
		bits += 2;
	p->n = n;
	p->half_bits = bits / 2;
	p->mask = ((uint64_t)1 << p->half_bits) - 1;
	for (int i = 0; i < 4; i++)
		p->key[i] = mix64(seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1));
}

uint64_t perm_map(const struct perm *p, uint64_t x)
{
	do {
		uint64_t l = x >> p->half_bits, r = x & p->mask;

		for (int i = 0; i < 4; i++) {
			uint64_t f = mix64(r ^ p->key[i]) & p->mask;
			uint64_t nl = r;

			r = l ^ f;
			l = nl;
		}
		x = (l << p->half_bits) | r;
	} while (x >= p->n);
	return x;
}
