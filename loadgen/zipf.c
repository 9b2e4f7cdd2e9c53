/*
 * zipf.c - xoshiro256** and the rejection-inversion Zipf sampler.
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
