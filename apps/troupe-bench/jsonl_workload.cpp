#include "apps/troupe-bench/jsonl_workload.hpp"

namespace troupe::bench {

namespace {

bool is_blank(const std::string& s) {
  return s.find_first_not_of(" \t\r") == std::string::npos;
}

std::optional<std::string> text_of(const nlohmann::json& v) {
  if (v.is_string()) {
    return v.get<std::string>();
  }
  // OpenAI content parts: the text parts joined.
  if (v.is_array()) {
    std::string out;
    for (const auto& part : v) {
      if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) {
        return std::nullopt;
      }
      if (!out.empty()) {
        out.push_back('\n');
      }
      out += part["text"].get<std::string>();
    }
    return out;
  }
  return std::nullopt;
}

} // namespace

std::optional<prompt> parse_prompt_line(const nlohmann::json& line, std::string& why) {
  if (!line.is_object()) {
    why = "expected a JSON object";
    return std::nullopt;
  }
  prompt p;
  if (auto it = line.find("user"); it != line.end()) {
    if (!it->is_string()) {
      why = "\"user\" must be a string";
      return std::nullopt;
    }
    p.key = it->get<std::string>();
  }
  if (auto it = line.find("max_tokens"); it != line.end()) {
    if (!it->is_number_integer() || it->get<long>() < 1) {
      why = "\"max_tokens\" must be a positive integer";
      return std::nullopt;
    }
    p.max_tokens = it->get<long>();
  }
  if (auto it = line.find("body"); it != line.end()) {
    if (!it->is_object()) {
      why = "\"body\" must be an object";
      return std::nullopt;
    }
    p.body = *it;
    return p;
  }
  if (auto it = line.find("system"); it != line.end()) {
    auto text = text_of(*it);
    if (!text) {
      why = "\"system\" must be a string";
      return std::nullopt;
    }
    p.system = std::move(*text);
  }
  if (auto it = line.find("prompt"); it != line.end()) {
    if (!it->is_string()) {
      why = "\"prompt\" must be a string";
      return std::nullopt;
    }
    p.messages.push_back({"user", it->get<std::string>()});
  } else if (auto it = line.find("messages"); it != line.end()) {
    if (!it->is_array()) {
      why = "\"messages\" must be an array";
      return std::nullopt;
    }
    for (const auto& m : *it) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
        why = "every message needs a string \"role\"";
        return std::nullopt;
      }
      auto role = m["role"].get<std::string>();
      auto text = m.contains("content") ? text_of(m["content"]) : std::nullopt;
      if (!text) {
        why = "message content must be a string or a list of text parts";
        return std::nullopt;
      }
      if (role == "system" || role == "developer") {
        p.system += p.system.empty() ? *text : "\n" + *text;
      } else if (role == "user" || role == "assistant") {
        p.messages.push_back({std::move(role), std::move(*text)});
      } else {
        why = "unsupported role \"" + role + "\" (system, user or assistant)";
        return std::nullopt;
      }
    }
  } else {
    why = "a line needs \"prompt\", \"messages\" or \"body\"";
    return std::nullopt;
  }
  if (p.messages.empty() || p.messages.back().role != "user") {
    why = "the conversation must end with a user message";
    return std::nullopt;
  }
  return p;
}

std::unique_ptr<jsonl_workload> jsonl_workload::read(std::istream& in, const std::string& name,
                                                     std::string& why) {
  auto w = std::unique_ptr<jsonl_workload>(new jsonl_workload);
  w->name_ = name;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (is_blank(line)) {
      continue;
    }
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded()) {
      why = name + ":" + std::to_string(number) + ": not valid JSON";
      return nullptr;
    }
    std::string line_why;
    auto p = parse_prompt_line(json, line_why);
    if (!p) {
      why = name + ":" + std::to_string(number) + ": " + line_why;
      return nullptr;
    }
    w->prompts_.push_back(std::move(*p));
  }
  if (w->prompts_.empty()) {
    why = name + ": no prompt in the file";
    return nullptr;
  }
  return w;
}

prompt jsonl_workload::next() {
  return prompts_[next_slot()];
}

std::size_t jsonl_workload::next_slot() {
  auto slot = next_;
  next_ = (next_ + 1) % prompts_.size();
  return slot;
}

std::string jsonl_workload::describe() const {
  return "jsonl " + name_ + " (" + std::to_string(prompts_.size()) + " prompts, cycled)";
}

} // namespace troupe::bench
