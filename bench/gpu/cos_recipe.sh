# Sourced by the device scripts (train_all.sh, cos_candidate.sh), with DATA set: the Chain-of-Skills training sets
# and the shipped model's fresh architecture (LoRA experts over MiniLM) and loss weights.
COS_DATA=(
    --hotpotqa $DATA/hotpotqa/hotpot_train_100.json --hotpotqa-corpus $DATA/hotpotqa/hotpot_train_100_corpus.json
    --hotpotqa $DATA/hotpotqa/hotpot_train_more.json --twowiki $DATA/2wikimultihopqa/2wiki_train_more.json
    --musique $DATA/musique/musique_train_100.json --musique-corpus $DATA/musique/musique_train_100_corpus.json
    --nq-questions $DATA/nq/questions.jsonl --nq-corpus $DATA/nq/corpus.jsonl --nq-split train
    --squad $DATA/squad2/dev-v2.0.json --ottqa $DATA/ottqa --ottqa-questions $DATA/ottqa/dev.traced.json
    --wikipedia $DATA/wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2
    --wikipedia $DATA/wikipedia/enwiki-table-markup.xml.bz2
)
COS_FRESH_MODEL=(
    --variant lora --frozen-expert 1 --frozen-expert 3
    --pooling mean --expert-layer 2 --expert-layer 3 --expert-layer 4 --expert-layer 5 --lora-rank 8 --lora-alpha 16
    --lora-target query --lora-target key --lora-target value --lora-target attention_output
    --lora-target intermediate --lora-target output
)
COS_DATA_AND_MODEL=("${COS_DATA[@]}" "${COS_FRESH_MODEL[@]}" --weight reranking=2 --weight span=2 --source-temperature 0)
