// SoundTouch (LGPL-2.1, C++) for bench/dsp.sh, measured the way dspbench measures the other
// engines: the input in memory, 4096-frame blocks, CPU time of this thread per second of audio,
// best of DSPBENCH_REPEATS runs; writes the last render as a 32-bit float WAV.
//   soundtouch_bench RATE IN.wav OUT.wav      (IN: 32-bit float WAV, as bench/dsp.sh makes)
#include <SoundTouch.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

static double thread_cpu() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static unsigned le(const unsigned char *p, int n) {
    unsigned v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: soundtouch_bench RATE IN.wav OUT.wav\n"); return 2; }
    double rate = atof(argv[1]);
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    std::vector<unsigned char> bytes;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
    fclose(f);
    // Walk the RIFF chunks for fmt and data.
    int channels = 0, sampleRate = 0, tag = 0, bits = 0;
    const float *data = nullptr;
    size_t frames = 0;
    for (size_t pos = 12; pos + 8 <= bytes.size();) {
        unsigned size = le(&bytes[pos + 4], 4);
        if (pos + 8 + size > bytes.size()) size = bytes.size() - pos - 8;
        if (!memcmp(&bytes[pos], "fmt ", 4) && size >= 16) {
            tag = le(&bytes[pos + 8], 2);
            channels = le(&bytes[pos + 10], 2);
            sampleRate = le(&bytes[pos + 12], 4);
            bits = le(&bytes[pos + 22], 2);
            if (tag == 0xFFFE && size >= 40) tag = le(&bytes[pos + 32], 2);
        } else if (!memcmp(&bytes[pos], "data", 4)) {
            data = reinterpret_cast<const float *>(&bytes[pos + 8]);
            frames = channels ? size / 4 / channels : 0;
        }
        pos += 8 + size + (size & 1);
    }
    if (tag != 3 || bits != 32 || !data || channels < 1) { fprintf(stderr, "%s: need a 32-bit float WAV\n", argv[2]); return 1; }
    const char *r = getenv("DSPBENCH_REPEATS");
    int repeats = r ? atoi(r) : 3;
    double best = 1e30;
    std::vector<float> out;
    for (int run = 0; run < repeats; run++) {
        soundtouch::SoundTouch st;
        st.setSampleRate(sampleRate);
        st.setChannels(channels);
        st.setTempo(rate);
        out.clear();
        out.reserve(frames * channels / rate + 65536);
        std::vector<float> got(16384 * channels);
        double start = thread_cpu();
        auto drain = [&] {
            unsigned k;
            while ((k = st.receiveSamples(got.data(), 16384)) > 0) out.insert(out.end(), got.begin(), got.begin() + k * channels);
        };
        for (size_t off = 0; off < frames; off += 4096) {
            size_t count = frames - off < 4096 ? frames - off : 4096;
            st.putSamples(data + off * channels, count);
            drain();
        }
        st.flush();
        drain();
        double cpu = thread_cpu() - start;
        if (cpu < best) best = cpu;
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o) { perror(argv[3]); return 1; }
    unsigned dataBytes = out.size() * 4;
    unsigned char h[44];
    auto put = [&](int at, unsigned v, int nb) { for (int i = 0; i < nb; i++) h[at + i] = v >> (8 * i) & 0xFF; };
    memcpy(h, "RIFF", 4); put(4, 36 + dataBytes, 4); memcpy(h + 8, "WAVEfmt ", 8); put(16, 16, 4); put(20, 3, 2);
    put(22, channels, 2); put(24, sampleRate, 4); put(28, sampleRate * channels * 4, 4); put(32, channels * 4, 2);
    put(34, 32, 2); memcpy(h + 36, "data", 4); put(40, dataBytes, 4);
    fwrite(h, 1, 44, o);
    fwrite(out.data(), 4, out.size(), o);
    fclose(o);
    double seconds = (double)frames / sampleRate;
    printf("{\"engine\":\"soundtouch\",\"rate\":%g,\"audio_s\":%g,\"cpu_s\":%g,\"cpu_ms_per_audio_s\":%g}\n", rate, seconds, best,
           best / seconds * 1000);
    return 0;
}
