import StreamShared
/// StreamClient: the player pipeline (Source → Throttle → Parser → Converter → DSP → Output).
public enum StreamClientModule {}
