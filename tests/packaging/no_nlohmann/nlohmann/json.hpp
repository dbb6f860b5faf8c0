// Stands in for nlohmann-json ahead of the real one in the include path of the consumers that
// must compile without it (consumer_targets.cmake): including it is the error.
#error "posemb: this translation unit must compile without nlohmann-json"
