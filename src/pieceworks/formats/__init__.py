"""File formats: tokenizer.json, and (as the models land) the files of tiktoken, SentencePiece, BERT and GPT-2."""
